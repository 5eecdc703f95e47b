"""Extracts the include/ folders of a wheel (a zip) into a directory: .ci/run keeps only the
headers of NVIDIA's cuBLAS wheel, for the cuBLASLt ABI check. Usage: wheel_headers.py WHEEL DIR"""
import sys
import zipfile

wheel, dest = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(wheel) as z:
    names = [n for n in z.namelist() if "/include/" in n and n.endswith(".h")]
    for n in names:
        z.extract(n, dest)
print(f"{len(names)} headers from {wheel}")
sys.exit(0 if names else 1)
