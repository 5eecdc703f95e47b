"""Mixed-precision (bfloat16) training as in PyTorch's AMP tutorial, with the import changed.
bfloat16 keeps float32's exponent range, so the GradScaler rarely has anything to do; it is
kept so the loop is the same as the float16 one. Runs on CUDA when present, else on the CPU.
Run: python examples/train_bf16.py"""
import mpamp
from mpamp import nn, optim
from mpamp.amp import GradScaler, autocast
from mpamp.utils.data import DataLoader, TensorDataset

device = "cuda" if mpamp.cuda.is_available() else "cpu"
print("CUDA bf16 supported:", mpamp.cuda.is_bf16_supported())
print("CPU native bf16 instructions (AVX512_BF16):", mpamp.cpu.is_bf16_supported())
print(f"Training on {device} in bfloat16")

# A synthetic regression task: 1000 samples of 10 features.
mpamp.manual_seed(0)
inputs = mpamp.randn(1000, 10)
targets = mpamp.randn(1000, 1)
loader = DataLoader(TensorDataset(inputs, targets), batch_size=32, shuffle=True)

model = nn.Sequential(nn.Linear(10, 10), nn.ReLU(), nn.Linear(10, 1)).to(device)
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=0.001)
scaler = GradScaler(device)

for epoch in range(10):
    for data, target in loader:
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        with autocast(device_type=device, dtype=mpamp.bfloat16):
            output = model(data)
            loss = criterion(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"Epoch {epoch + 1}, Loss: {loss.item():.4f}")

mpamp.save(model.state_dict(), "model_bfloat16.pth")
print("Saved model_bfloat16.pth")
