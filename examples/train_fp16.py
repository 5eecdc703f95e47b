"""Mixed-precision (float16) training as in PyTorch's AMP tutorial, with the import changed:
autocast runs the Linear layers in fp16, GradScaler keeps small fp16 gradients from flushing
to zero. Runs on CUDA when present, else on the CPU. Run: python examples/train_fp16.py"""
import mpamp
from mpamp import nn, optim
from mpamp.amp import GradScaler, autocast
from mpamp.utils.data import DataLoader, TensorDataset

device = "cuda" if mpamp.cuda.is_available() else "cpu"
print(f"Training on {device} in float16")

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
        with autocast(device_type=device, dtype=mpamp.float16):
            output = model(data)
            loss = criterion(output, target)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    print(f"Epoch {epoch + 1}, Loss: {loss.item():.4f}")

mpamp.save(model.state_dict(), "model_fp16.pth")
print("Saved model_fp16.pth")
