"""A CNN trained the way pytorch/examples' mnist/main.py trains one (our own code, written for
torch): Conv2d/BatchNorm2d/ReLU(inplace)/max_pool2d/Dropout/flatten/Linear/log_softmax,
nll_loss, Adadelta with StepLR, accuracy via argmax/eq/sum. Synthetic 28x28 uint8 images: each
class a bright bar at its own place, plus noise. Options as --key=value.
Prints "test accuracy <x>" and "test loss <x>" at the end."""
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR
from torch.utils.data import DataLoader, TensorDataset

epochs, batch_size, lr, gamma, seed = 2, 64, 1.0, 0.7, 1
n_train, n_test = 512, 256
amp = "none"                      # or 'bfloat16'
for arg in sys.argv[1:]:
    key, val = arg[2:].split("=", 1)
    globals()[key] = type(globals()[key])(val)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)
        self.act = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.act(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.act(self.fc1(x))
        x = self.dropout2(x)
        return F.log_softmax(self.fc2(x), dim=1)


def make_images(n, rng):
    labels = rng.integers(0, 10, size=n)
    img = rng.integers(0, 120, size=(n, 1, 28, 28)).astype(np.uint8)
    for i, c in enumerate(labels):
        r = 2 + 2 * c + int(rng.integers(-1, 2))      # jittered: neighbouring classes overlap
        img[i, 0, r:r + 2, 4:24] += 50
    x = torch.from_numpy(img.astype(np.float32) / 255.0)
    return (x - 0.1307) / 0.3081, torch.from_numpy(labels.astype(np.int64))


torch.manual_seed(seed)
rng = np.random.default_rng(seed)
train_loader = DataLoader(TensorDataset(*make_images(n_train, rng)), batch_size=batch_size,
                          shuffle=True)
test_loader = DataLoader(TensorDataset(*make_images(n_test, rng)), batch_size=128)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
model = Net().to(device)
optimizer = optim.Adadelta(model.parameters(), lr=lr)
scheduler = StepLR(optimizer, step_size=1, gamma=gamma)


def ctx():
    return torch.autocast(device.type, dtype=torch.bfloat16, enabled=amp == "bfloat16")


for epoch in range(1, epochs + 1):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = data.to(device), target.to(device)
        optimizer.zero_grad()
        with ctx():
            output = model(data)
        loss = F.nll_loss(output.float(), target)
        loss.backward()
        optimizer.step()
        if batch_idx % 4 == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(train_loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}")
    scheduler.step()

model.eval()
test_loss, correct = 0.0, 0
with torch.no_grad():
    for data, target in test_loader:
        with ctx():
            output = model(data.to(device)).float()
        test_loss += F.nll_loss(output, target.to(device), reduction="sum").item()
        pred = output.argmax(dim=1, keepdim=True)
        correct += pred.eq(target.view_as(pred)).sum().item()
print(f"test loss {test_loss / len(test_loader.dataset):.4f}")
print(f"test accuracy {correct / len(test_loader.dataset):.4f}")
