"""A training script as PyTorch's public examples write one (a small CNN, Adadelta, StepLR, its
own epoch loop, evaluation and save), on one process: the form `mnist_murmur.py` ports to murmur.
The data are synthetic 28x28 images (class k lights up the k-th band of rows, with noise), so
it runs anywhere in seconds; swap in torchvision's datasets for real digits."""

import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.optim.lr_scheduler import StepLR


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.fc1 = nn.Linear(8 * 13 * 13, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.relu(self.fc1(torch.flatten(x, 1)))
        return F.log_softmax(self.fc2(x), dim=1)


def dataset(n, seed):
    g = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, 10, (n,), generator=g)
    images = torch.randn(n, 1, 28, 28, generator=g) * 0.8
    for k in range(10):
        images[labels == k, :, 2 * k + 4:2 * k + 7, :] += 1.5
    return torch.utils.data.TensorDataset(images, labels)


def train(args, model, loader, optimizer, epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(loader):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data), target)
        loss.backward()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print(f"Train Epoch: {epoch} [{batch_idx * len(data)}/{len(loader.dataset)}]"
                  f"\tLoss: {loss.item():.6f}", flush=True)


def test(model, loader):
    model.eval()
    loss, correct = 0.0, 0
    with torch.no_grad():
        for data, target in loader:
            output = model(data)
            loss += F.nll_loss(output, target, reduction="sum").item()
            correct += (output.argmax(dim=1) == target).sum().item()
    n = len(loader.dataset)
    print(f"Test set: Average loss: {loss / n:.4f}, Accuracy: {correct}/{n} "
          f"({100.0 * correct / n:.0f}%)", flush=True)
    return correct / n


def main():
    parser = argparse.ArgumentParser(description="a small CNN, the public example's way")
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=14)
    parser.add_argument("--lr", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.7)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log-interval", type=int, default=10)
    parser.add_argument("--train-size", type=int, default=6000)
    parser.add_argument("--save", default="", help="where to save the model after training")
    args = parser.parse_args()
    torch.manual_seed(args.seed)
    train_set, test_set = dataset(args.train_size, 1), dataset(1000, 2)
    loader = torch.utils.data.DataLoader(train_set, batch_size=args.batch_size, shuffle=True)
    test_loader = torch.utils.data.DataLoader(test_set, batch_size=1000)
    model = Net()
    optimizer = optim.Adadelta(model.parameters(), lr=args.lr)
    scheduler = StepLR(optimizer, step_size=1, gamma=args.gamma)
    for epoch in range(1, args.epochs + 1):
        train(args, model, loader, optimizer, epoch)
        test(model, test_loader)
        scheduler.step()
    if args.save:
        torch.save(model.state_dict(), args.save)
        print(f"saved {args.save}", flush=True)


if __name__ == "__main__":
    main()
