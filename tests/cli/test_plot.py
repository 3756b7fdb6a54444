"""`ftspec output --plot`: the PNG shows the recorded points (pixels checked, not only the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("matplotlib")


def _pixel(image, fig, ax, x: float, y: float):  # type: ignore[no-untyped-def]
    px, py = ax.transData.transform((x, y))
    height = image.shape[0]
    return image[int(height - py + 0.5), int(px + 0.5)][:3]


def _near(rgb, hex_color: str) -> bool:  # type: ignore[no-untyped-def]
    want = [int(hex_color[i:i + 2], 16) / 255 for i in (1, 3, 5)]
    return all(abs(float(a) - b) < 0.12 for a, b in zip(rgb, want, strict=True))


def test_curves_png_has_each_recorded_point(tmp_path: Path) -> None:
    import matplotlib.image as mpimg
    from ftspec.cli.plot import LOSS_COLOR, LR_COLOR, draw_curves

    curve = {"step": [1, 2, 3, 4, 5, 6], "loss": [5.8, 5.1, 4.4, 4.0, 3.9, 3.7],
             "lr": [0.005, 0.01, 0.009, 0.006, 0.003, 0.0]}
    path = tmp_path / "curves.png"
    fig = draw_curves(curve, path)
    loss_ax, lr_ax = fig.axes
    (loss_line,) = loss_ax.get_lines()
    assert list(loss_line.get_xdata()) == curve["step"]
    assert list(loss_line.get_ydata()) == curve["loss"]
    assert list(lr_ax.get_lines()[0].get_ydata()) == curve["lr"]
    image = mpimg.imread(path)
    assert image.shape[:2] == (520, 700)  # 7 x 5.2 inches at 100 dpi
    for s, v in zip(curve["step"], curve["loss"], strict=True):
        assert _near(_pixel(image, fig, loss_ax, s, v), LOSS_COLOR), (s, v)
    for s, v in zip(curve["step"], curve["lr"], strict=True):
        assert _near(_pixel(image, fig, lr_ax, s, v), LR_COLOR), (s, v)
    # and not everywhere: a point off the curve is background
    assert not _near(_pixel(image, fig, loss_ax, 1, 3.7), LOSS_COLOR)


def test_the_title_names_the_run(tmp_path: Path) -> None:
    from ftspec.cli.plot import draw_curves

    curve = {"step": [1, 2], "loss": [5.8, 5.1], "lr": [None, None]}
    fig = draw_curves(curve, tmp_path / "c.png", "local.run.tiny-local (Succeeded)")
    assert fig._suptitle.get_text() == "local.run.tiny-local (Succeeded)"
