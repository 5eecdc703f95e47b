"""A DDP training loop in which rank 1 fails at step 2, for tests/test_distributed.py: it
raises ('raise'), kills itself ('kill'), exits with status 3 ('exit'), or stays alive without
joining the collectives ('hang', which the others detect through init_process_group's
timeout). The job must end within a bounded time naming the failed rank (or, for 'hang', the
rank that timed out). Usage: failure_job.py MODE [TIMEOUT_SECONDS]"""
import datetime
import os
import signal
import sys
import time

import mpamp
import mpamp.distributed as dist
from mpamp.nn.parallel import DistributedDataParallel as DDP

mode = sys.argv[1]
timeout = datetime.timedelta(seconds=float(sys.argv[2]) if len(sys.argv) > 2 else 1800)
dist.init_process_group("gloo", timeout=timeout)
rank = dist.get_rank()
model = DDP(mpamp.nn.Linear(4, 4))
for step in range(5):
    if step == 2 and rank == 1:
        if mode == "raise":
            raise ValueError("rank 1 raises on purpose")
        if mode == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "exit":
            sys.exit(3)
        if mode == "hang":
            time.sleep(300)
    model(mpamp.ones(2, 4)).sum().backward()
print(f"rank {rank} finished", flush=True)
