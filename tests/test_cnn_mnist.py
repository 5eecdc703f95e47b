"""A CNN in the shape of pytorch/examples' MNIST network (our own code, torch-identical calls
only): Conv2d(1,32,3,1) -> ReLU -> Conv2d(32,64,3,1) -> ReLU -> max_pool2d(2) -> Dropout ->
flatten -> Linear -> ReLU -> Dropout -> Linear -> log_softmax, nll_loss. It learns synthetic
28x28 digits with SGD and Adam, in fp32 and under bf16 autocast, and with the same weights
gives torch's loss and gradients."""
import numpy as np
import pytest

import mpamp as torch
import mpamp.nn as nn
import mpamp.nn.functional as F
from conftest import to_numpy


class Net(nn.Module):
    def __init__(self, batch_norm=False):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.bn = nn.BatchNorm2d(64) if batch_norm else nn.Identity()
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(self.bn(x))
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def synthetic_digits(n, seed):
    """Ten fixed 28x28 templates plus noise; labels 0..9."""
    rng = np.random.default_rng(seed)
    templates = np.random.default_rng(99).standard_normal((10, 1, 28, 28)).astype(np.float32)
    y = rng.integers(0, 10, n)
    x = templates[y] + 0.8 * rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
    return torch.tensor(x), torch.tensor(y)


@pytest.mark.parametrize("opt,autocast,bn", [("adam", False, False), ("sgd", False, True),
                                             ("adam", True, True), ("sgd", True, False)])
def test_mnist_shaped_cnn_learns(opt, autocast, bn):
    torch.manual_seed(0)
    model = Net(batch_norm=bn)
    scale = 0.25 if bn else 1.0           # batch norm: larger fc1 inputs (torch too)
    optimizer = (torch.optim.Adam(model.parameters(), lr=1e-3 * scale) if opt == "adam"
                 else torch.optim.SGD(model.parameters(), lr=0.05 * scale, momentum=0.9))
    model.train()
    losses = []
    for step in range(12):
        data, target = synthetic_digits(32, step)
        optimizer.zero_grad()
        with torch.autocast(device_type="cpu", dtype=torch.bfloat16, enabled=autocast):
            output = model(data)
            loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
        assert all(p.grad.dtype is torch.float32 for p in model.parameters())
    assert np.isfinite(losses).all()
    assert np.mean(losses[-3:]) < 0.6 * losses[0], losses
    model.eval()
    data, target = synthetic_digits(200, 1000)
    with torch.no_grad():
        pred = model(data).argmax(dim=1)
    accuracy = (to_numpy(pred) == to_numpy(target)).mean()
    assert accuracy > 0.8, accuracy


def test_same_weights_give_torch_loss_and_gradients():
    real = pytest.importorskip("torch")

    class TorchNet(real.nn.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = real.nn.Conv2d(1, 32, 3, 1)
            self.conv2 = real.nn.Conv2d(32, 64, 3, 1)
            self.bn = real.nn.BatchNorm2d(64)
            self.fc1 = real.nn.Linear(9216, 128)
            self.fc2 = real.nn.Linear(128, 10)

        def forward(self, x):
            x = real.relu(self.bn(self.conv2(real.relu(self.conv1(x)))))
            x = real.nn.functional.max_pool2d(x, 2).flatten(1)
            return real.nn.functional.log_softmax(self.fc2(real.relu(self.fc1(x))), dim=1)

    tnet = TorchNet()
    model = Net(batch_norm=True)
    model.dropout1.p = model.dropout2.p = 0.0
    model.load_state_dict({k: torch.tensor(v.numpy()) for k, v in tnet.state_dict().items()})
    data, target = synthetic_digits(8, 5)
    tl = real.nn.functional.nll_loss(tnet(real.tensor(data.numpy())),
                                     real.tensor(target.numpy()))
    ml = F.nll_loss(model(data), target)
    assert abs(ml.item() - tl.item()) < 1e-5
    tl.backward()
    ml.backward()
    tparams = dict(tnet.named_parameters())
    for name, p in model.named_parameters():
        np.testing.assert_allclose(to_numpy(p.grad), tparams[name].grad.numpy(), rtol=1e-3,
                                   atol=1e-5, err_msg=name)
    for name, b in tnet.named_buffers():
        np.testing.assert_allclose(to_numpy(model.state_dict()[name]), b.numpy(), rtol=1e-5,
                                   atol=1e-6, err_msg=name)
