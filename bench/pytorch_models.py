"""PyTorch twins of vdnn's models/fmnist_cnn.json, models/vgg_cifar.json, models/resnet18.json and
models/resnet50.json,
initialized and optimized the way vdnn does it. Works with PyTorch 1.13 and 2.x.

    from pytorch_models import build, MODELS, init_like_vdnn, sgd_like_vdnn
    model = build("resnet18", input_shape=(3, 64, 64), classes=1000)
    opt = sgd_like_vdnn(model, lr=0.01)        # momentum 0.9, weight decay 5e-4 on weights only

vdnn's conventions (src/layers, src/runtime/sgd.h): convolutions He-normal (std sqrt(2/fan_in)),
fully connected LeCun-normal (std sqrt(1/fan_in)), biases 0, batch norm scale 1 / shift 0
(eps 1e-5, momentum 0.1); SGD with PyTorch's momentum semantics, weight decay on conv/FC weights only.
"""
import math

import torch
import torch.nn as nn

# model -> (default input C, H, W; default classes)
MODELS = {
    "fmnist_cnn": ((1, 28, 28), 10),
    "vgg_cifar": ((3, 32, 32), 10),
    "resnet18": ((3, 224, 224), 1000),
    "resnet50": ((3, 224, 224), 1000),
}


def fmnist_cnn(shape, classes) -> nn.Module:
    # conv 3x3 pad 1 without bias, BN, ReLU, 2x2 max-pool (x2), fc 256, ReLU, dropout 0.3, fc.
    c, h, w = shape
    return nn.Sequential(
        nn.Conv2d(c, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * (h // 4) * (w // 4), 256), nn.ReLU(inplace=True), nn.Dropout(0.3),
        nn.Linear(256, classes),
    )


def vgg_cifar(shape, classes) -> nn.Module:
    # conv 64,64,pool,128,128,pool,256,256,pool (3x3 pad 1, bias, ReLU), fc 512, ReLU, fc.
    c_in, h, w = shape
    layers = []
    for stage in (64, 128, 256):
        for _ in range(2):
            layers += [nn.Conv2d(c_in, stage, 3, padding=1, bias=True), nn.ReLU(inplace=True)]
            c_in = stage
        layers.append(nn.MaxPool2d(2))
    layers += [nn.Flatten(), nn.Linear(256 * (h // 8) * (w // 8), 512), nn.ReLU(inplace=True),
               nn.Linear(512, classes)]
    return nn.Sequential(*layers)


def shortcut(c_in, c_out, stride):
    """None (identity) or a 1x1 conv (stride) + BN where the shape changes (torchvision v1.5)."""
    if stride == 1 and c_in == c_out:
        return None
    return nn.Sequential(nn.Conv2d(c_in, c_out, 1, stride=stride, bias=False), nn.BatchNorm2d(c_out))


class BasicBlock(nn.Module):
    """layerN_M of resnet18.json: conv3x3(stride)-BN-ReLU-conv3x3-BN, + shortcut, ReLU; the shortcut
    is a 1x1 stride-2 conv + BN where the shape changes (torchvision v1.5)."""

    def __init__(self, c_in, c_out, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.down = shortcut(c_in, c_out, stride)

    def forward(self, x):
        y = self.bn2(self.conv2(self.relu(self.bn1(self.conv1(x)))))
        return self.relu(y + (x if self.down is None else self.down(x)))


class Bottleneck(nn.Module):
    """layerN_M of resnet50.json: conv1x1-BN-ReLU-conv3x3(stride)-BN-ReLU-conv1x1(4x)-BN, + shortcut,
    ReLU; the shortcut is a 1x1 conv (stride) + BN where the shape changes (torchvision v1.5)."""

    def __init__(self, c_in, width, stride):
        super().__init__()
        c_out = width * 4
        self.conv1 = nn.Conv2d(c_in, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride=stride, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, c_out, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(c_out)
        self.relu = nn.ReLU(inplace=True)
        self.down = shortcut(c_in, c_out, stride)

    def forward(self, x):
        y = self.relu(self.bn1(self.conv1(x)))
        y = self.relu(self.bn2(self.conv2(y)))
        y = self.bn3(self.conv3(y))
        return self.relu(y + (x if self.down is None else self.down(x)))


def resnet(shape, classes, block, counts, expansion) -> nn.Module:
    # conv 7x7/2 + BN + ReLU, max-pool 3x3/2 pad 1, four stages of blocks at widths 64..512 (the
    # first stage at stride 1), global average pool, fc.
    layers = [nn.Conv2d(shape[0], 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
              nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1)]
    c_in = 64
    for i, (width, count) in enumerate(zip((64, 128, 256, 512), counts)):
        for j in range(count):
            layers.append(block(c_in, width, 2 if i > 0 and j == 0 else 1))
            c_in = width * expansion
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(c_in, classes)]
    return nn.Sequential(*layers)


def resnet18(shape, classes) -> nn.Module:
    return resnet(shape, classes, BasicBlock, (2, 2, 2, 2), 1)


def resnet50(shape, classes) -> nn.Module:
    return resnet(shape, classes, Bottleneck, (3, 4, 6, 3), 4)


BUILDERS = {"fmnist_cnn": fmnist_cnn, "vgg_cifar": vgg_cifar, "resnet18": resnet18, "resnet50": resnet50}


def parse_input(text):
    """'3x64x64' -> (3, 64, 64); None -> None."""
    if text is None:
        return None
    parts = tuple(int(p) for p in text.lower().split("x"))
    if len(parts) != 3 or min(parts) < 1:
        raise ValueError(f"--input: expected CxHxW, got '{text}'")
    return parts


def init_like_vdnn(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, (nn.Conv2d, nn.Linear)):
            fan_in = m.weight[0].numel()
            std = math.sqrt(2.0 / fan_in) if isinstance(m, nn.Conv2d) else math.sqrt(1.0 / fan_in)
            with torch.no_grad():
                m.weight.normal_(0.0, std)
                if m.bias is not None:
                    m.bias.zero_()
        elif isinstance(m, nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)


def build(name, input_shape=None, classes=None) -> nn.Module:
    default_shape, default_classes = MODELS[name]
    model = BUILDERS[name](input_shape or default_shape, classes or default_classes)
    init_like_vdnn(model)
    return model


def sgd_like_vdnn(model: nn.Module, lr: float, momentum: float = 0.9, weight_decay: float = 5e-4):
    """SGD with weight decay on conv/FC weights only (biases and BN scale/shift undecayed)."""
    decay, no_decay = [], []
    for module in model.modules():
        for name, p in module.named_parameters(recurse=False):
            is_weight = isinstance(module, (nn.Conv2d, nn.Linear)) and name == "weight"
            (decay if is_weight else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay},
              {"params": no_decay, "weight_decay": 0.0}]
    return torch.optim.SGD(groups, lr=lr, momentum=momentum)
