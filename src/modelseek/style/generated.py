"""A generated style-retrieval benchmark that runs offline.

Content images are drawn by code (gradient backgrounds, ellipses, rectangles, polygons and stripe
patches in random colours); with ``content="mixed"`` crops of scikit-image's bundled sample photographs
are added. A *style* is a parametric image transformation: a family (palette mapping, posterisation,
halftone, blur, sharpening, ink edges, film grain, pixelation, scanlines, emboss, solarisation, ordered
dithering, chromatic aberration, cross-hatching, canvas texture, sepia vignette, oil (median) filter,
watercolour, stippling, hue rotation...) with parameters drawn once per style from a seeded generator, and
for half of the styles a colour grade (tint, gamma, saturation). Each image jitters its style's parameters
a little (as a LoRA's outputs vary with the seed), so that a style is a distribution, not a function.

Styles outnumbering the families reuse a family with other parameters (harder, like similar LoRAs).
Content ids are the groups of the grouped CV, so train and test folds never share a content image.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import ndimage as ndi

from ..core.errors import InputError
from .data import StyleDataset, StyleModels, resize_square

Style = Callable[[np.ndarray, np.random.Generator], np.ndarray]


# ------------------------------------------------------------------------------------------ content
def draw_content(size: int, rng: np.random.Generator) -> np.ndarray:
    """A random scene: gradient background plus 3-7 shapes and a stripe patch (H x W x 3 uint8)."""
    from PIL import Image, ImageDraw  # lazy: PIL

    yy, xx = np.mgrid[0:size, 0:size] / max(size - 1, 1)
    a = rng.uniform(0, 2 * np.pi)
    t = (np.cos(a) * xx + np.sin(a) * yy)
    t = (t - t.min()) / max(np.ptp(t), 1e-9)
    c0, c1 = rng.uniform(0, 255, 3), rng.uniform(0, 255, 3)
    bg = (c0[None, None] * (1 - t[..., None]) + c1[None, None] * t[..., None]).astype(np.uint8)
    im = Image.fromarray(bg)
    d = ImageDraw.Draw(im)
    for _ in range(int(rng.integers(3, 8))):
        col = tuple(int(v) for v in rng.integers(0, 256, 3))
        x0, y0 = rng.uniform(-0.1, 0.8, 2) * size
        w, h = rng.uniform(0.15, 0.6, 2) * size
        kind = rng.integers(0, 3)
        if kind == 0:
            d.ellipse([x0, y0, x0 + w, y0 + h], fill=col)
        elif kind == 1:
            d.rectangle([x0, y0, x0 + w, y0 + h], fill=col)
        else:
            pts = [tuple(p) for p in (rng.uniform(0, 1, (3, 2)) * size)]
            d.polygon(pts, fill=col)
    arr = np.asarray(im).astype(np.float64)
    # a patch of stripes (a texture in the content, so that texture alone does not reveal the style)
    x0, y0 = rng.integers(0, size // 2, 2)
    w = int(rng.integers(size // 5, size // 2))
    f = rng.uniform(0.2, 0.8)
    ang = rng.uniform(0, np.pi)
    stripes = 0.5 + 0.5 * np.sin(f * (np.cos(ang) * xx + np.sin(ang) * yy) * size)
    tint = rng.uniform(0, 255, 3)
    region = (slice(y0, y0 + w), slice(x0, x0 + w))
    s = stripes[region][..., None]
    arr[region] = arr[region] * (1 - 0.6 * s) + tint * 0.6 * s
    return np.clip(arr, 0, 255).astype(np.uint8)


SAMPLE_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "immunohistochemistry", "hubble_deep_field")


def photo_content(size: int, rng: np.random.Generator) -> np.ndarray:
    """A random square crop of one of scikit-image's bundled colour photographs."""
    try:
        import skimage.data as skd  # lazy: skimage
    except ImportError:
        raise InputError("content='mixed' needs scikit-image: pip install 'modelseek[vision]'") from None
    img = getattr(skd, SAMPLE_PHOTOS[int(rng.integers(len(SAMPLE_PHOTOS)))])()[..., :3]
    h, w = img.shape[:2]
    side = int(rng.uniform(0.4, 1.0) * min(h, w))
    y, x = int(rng.integers(0, h - side + 1)), int(rng.integers(0, w - side + 1))
    return resize_square(np.ascontiguousarray(img[y:y + side, x:x + side]), size)


# ------------------------------------------------------------------------------------------ styles
def _lum(x):
    return x @ np.array([0.299, 0.587, 0.114])


def _jit(v, rng, rel=0.1):
    return v * (1 + rng.uniform(-rel, rel))


def _grey3(g):
    return np.repeat(g[..., None], 3, axis=2)


def _palette(p):
    cols = np.sort(p.uniform(0, 1, (int(p.integers(3, 6)), 3)), axis=0)
    cols = cols[np.argsort(_lum(cols))]

    def f(x, r):
        lum = np.clip(_lum(x) + r.normal(0, 0.02), 0, 1) * (len(cols) - 1)
        i = np.clip(lum.astype(int), 0, len(cols) - 2)
        t = (lum - i)[..., None]
        return cols[i] * (1 - t) + cols[i + 1] * t
    return f


def _posterize(p):
    levels = int(p.integers(2, 5))
    return lambda x, r: np.round(x * (levels - 1 + r.uniform(-0.2, 0.2))) / max(levels - 1, 1)


def _halftone(p):
    period = int(p.integers(3, 6))
    ink, paper = p.uniform(0, 0.35, 3), p.uniform(0.75, 1, 3)

    def f(x, r):
        h, w = x.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        cy, cx = (yy % period) - period / 2 + 0.5, (xx % period) - period / 2 + 0.5
        dist = np.hypot(cy, cx) / (period / np.sqrt(2))
        dark = 1 - ndi.uniform_filter(_lum(x), period)
        on = (dist < np.sqrt(np.clip(dark, 0, 1)))[..., None]
        return np.where(on, ink, paper) * 0.85 + 0.15 * x
    return f


def _blur(p):
    s = p.uniform(1.0, 2.5)
    return lambda x, r: ndi.gaussian_filter(x, (_jit(s, r), _jit(s, r), 0))


def _sharpen(p):
    a = p.uniform(1.5, 3.0)
    return lambda x, r: x + _jit(a, r) * (x - ndi.gaussian_filter(x, (1.0, 1.0, 0)))


def _edges(p):
    ink = p.uniform(0, 0.3, 3)
    thr = p.uniform(0.08, 0.2)

    def f(x, r):
        g = ndi.gaussian_filter(_lum(x), 0.7)
        mag = np.hypot(ndi.sobel(g, 0), ndi.sobel(g, 1))
        flat = np.round(x * 4) / 4
        return np.where((mag > _jit(thr, r))[..., None], ink, flat)
    return f


def _grain(p):
    s = p.uniform(0.06, 0.16)
    return lambda x, r: x + r.normal(0, _jit(s, r), x.shape[:2])[..., None]


def _colour_noise(p):
    s = p.uniform(0.06, 0.16)
    return lambda x, r: x + r.normal(0, _jit(s, r), x.shape)


def _pixelate(p):
    b = int(p.integers(3, 7))

    def f(x, r):
        h, w = x.shape[:2]
        small = x[::b, ::b]
        return np.repeat(np.repeat(small, b, 0), b, 1)[:h, :w]
    return f


def _scanlines(p):
    k, depth = int(p.integers(2, 5)), p.uniform(0.3, 0.7)

    def f(x, r):
        rows = (np.arange(x.shape[0]) % k == 0)[:, None, None]
        return x * np.where(rows, 1 - _jit(depth, r), 1.0)
    return f


def _emboss(p):
    ang = p.uniform(0, 2 * np.pi)
    tint = p.uniform(0.4, 0.7, 3)

    def f(x, r):
        g = _lum(x)
        relief = np.cos(ang) * ndi.sobel(g, 1) + np.sin(ang) * ndi.sobel(g, 0)
        return tint + 0.25 * _grey3(relief)
    return f


def _solarize(p):
    t = p.uniform(0.35, 0.65)
    return lambda x, r: np.where(x > _jit(t, r, 0.05), 1 - x, x)


_BAYER = np.array([[0, 8, 2, 10], [12, 4, 14, 6], [3, 11, 1, 9], [15, 7, 13, 5]]) / 16.0


def _dither(p):
    levels = int(p.integers(2, 4))

    def f(x, r):
        h, w = x.shape[:2]
        m = np.tile(_BAYER, (h // 4 + 1, w // 4 + 1))[:h, :w, None]
        return np.floor(x * (levels - 1) + m) / (levels - 1)
    return f


def _chroma(p):
    d = int(p.integers(2, 5))
    return lambda x, r: np.stack([np.roll(x[..., 0], d, 1), x[..., 1], np.roll(x[..., 2], -d, 1)], axis=2)


def _hatch(p):
    period, ink = int(p.integers(4, 7)), p.uniform(0, 0.3, 3)
    paper = p.uniform(0.8, 1.0, 3)

    def f(x, r):
        h, w = x.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        g = _lum(x)
        line1 = (xx + yy) % period == 0
        line2 = (xx - yy) % period == 0
        line3 = yy % period == 0
        on = (line1 & (g < 0.75)) | (line2 & (g < 0.5)) | (line3 & (g < 0.25))
        return np.where(on[..., None], ink, paper)
    return f


def _canvas(p):
    f1, f2 = p.uniform(0.8, 1.6, 2)
    amp = p.uniform(0.15, 0.3)

    def f(x, r):
        h, w = x.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        weave = np.sin(f1 * xx) * np.sin(f2 * yy) + 0.5 * ndi.gaussian_filter(r.normal(0, 1, (h, w)), 0.8)
        return x * (1 + _jit(amp, r) * weave[..., None])
    return f


def _sepia(p):
    strength = p.uniform(0.6, 1.0)
    m = np.array([[0.393, 0.769, 0.189], [0.349, 0.686, 0.168], [0.272, 0.534, 0.131]])

    def f(x, r):
        h, w = x.shape[:2]
        yy, xx = np.mgrid[0:h, 0:w]
        vig = 1 - 0.8 * (((yy - h / 2) / h) ** 2 + ((xx - w / 2) / w) ** 2)
        s = _jit(strength, r)
        return ((1 - s) * x + s * (x @ m.T)) * vig[..., None]
    return f


def _oil(p):
    k = int(p.integers(3, 6))
    sat = p.uniform(1.2, 1.6)

    def f(x, r):
        y = ndi.median_filter(x, size=(k, k, 1))
        m = y.mean(axis=2, keepdims=True)
        return m + _jit(sat, r) * (y - m)
    return f


def _watercolour(p):
    s = p.uniform(1.5, 2.5)

    def f(x, r):
        y = ndi.gaussian_filter(x, (s, s, 0))
        edge = np.abs(ndi.laplace(_lum(y)))[..., None]
        paper = 1 + 0.08 * ndi.gaussian_filter(r.normal(0, 1, x.shape[:2]), 1.0)[..., None]
        return (0.6 * y + 0.4) * paper - 3 * edge
    return f


def _stipple(p):
    ink, paper = p.uniform(0, 0.3, 3), p.uniform(0.8, 1, 3)
    density = p.uniform(0.7, 1.0)
    return lambda x, r: np.where((r.uniform(0, 1, x.shape[:2]) < density * (1 - _lum(x)))[..., None], ink, paper)


def _hue(p):
    shift = p.uniform(0.15, 0.85)

    def f(x, r):
        from matplotlib.colors import hsv_to_rgb, rgb_to_hsv  # lazy: matplotlib

        hsv = rgb_to_hsv(np.clip(x, 0, 1))
        hsv[..., 0] = (hsv[..., 0] + _jit(shift, r, 0.05)) % 1.0
        return hsv_to_rgb(hsv)
    return f


def _threshold(p):
    dark, light = p.uniform(0, 0.4, 3), p.uniform(0.6, 1, 3)
    return lambda x, r: np.where((_lum(x) > 0.5 + r.uniform(-0.05, 0.05))[..., None], light, dark)


FAMILIES: dict[str, Callable[[np.random.Generator], Style]] = {
    "palette": _palette, "posterize": _posterize, "halftone": _halftone, "blur": _blur, "sharpen": _sharpen,
    "edges": _edges, "grain": _grain, "colour-noise": _colour_noise, "pixelate": _pixelate,
    "scanlines": _scanlines, "emboss": _emboss, "solarize": _solarize, "dither": _dither,
    "chroma-shift": _chroma, "crosshatch": _hatch, "canvas": _canvas, "sepia-vignette": _sepia, "oil": _oil,
    "watercolour": _watercolour, "stipple": _stipple, "hue-rotate": _hue, "threshold": _threshold,
}


def _grade(p: np.random.Generator) -> Style:
    tint, gamma, sat = p.uniform(0.8, 1.2, 3), p.uniform(0.6, 1.6), p.uniform(0.3, 1.5)

    def f(x, r):
        x = np.clip(x, 0, 1) ** _jit(gamma, r, 0.05)
        m = x.mean(axis=2, keepdims=True)
        return (m + sat * (x - m)) * tint
    return f


def make_styles(n_styles: int, seed: int = 0) -> list[tuple[str, Style]]:
    """``n_styles`` (name, style) pairs; families cycle in a seeded order, parameters drawn per style."""
    if n_styles < 2:
        raise InputError(f"need at least 2 styles, got {n_styles}", field="styles")
    rng = np.random.default_rng([seed, 1])
    names = list(FAMILIES)
    order = [names[i] for i in rng.permutation(len(names))]
    styles: list[tuple[str, Style]] = []
    for i in range(n_styles):
        fam = order[i % len(order)]
        p = np.random.default_rng([seed, 2, i])
        core = FAMILIES[fam](p)
        grade = _grade(p) if p.uniform() < 0.5 else None

        def style(x, r, core=core, grade=grade):
            y = core(x, r)
            return grade(y, r) if grade is not None else y

        styles.append((f"{i + 1:02d}-{fam}{'+grade' if grade else ''}", style))
    return styles


#: the generated benchmark keeps every image in memory (uint8 RGB); beyond this it is a typo, not a benchmark
MAX_GENERATED_BYTES = 4 * 2**30


def generated_style_dataset(n_styles: int = 20, n_content: int = 20, size: int = 64, seed: int = 0,
                            content: str = "shapes") -> StyleDataset:
    """Every content image rendered in every style: ``n_styles * n_content`` labelled images in memory.

    Model ids are ``1..n_styles`` (names give the family), query ids ``gen-<content>-<style>``, groups the
    content ids. ``content`` is ``shapes`` (drawn by code) or ``mixed`` (every other content image a crop of
    a scikit-image sample photograph).
    """
    if content not in ("shapes", "mixed"):
        raise InputError(f"unknown content source {content!r}; valid: shapes, mixed", field="content")
    if n_content < 2:
        raise InputError(f"need at least 2 content images, got {n_content}", field="content")
    if size < 16:
        raise InputError(f"image size must be at least 16, got {size}", field="size")
    need = int(n_styles) * int(n_content) * int(size) ** 2 * 3
    if need > MAX_GENERATED_BYTES:
        raise InputError(f"{n_styles:,} styles x {n_content:,} contents at {size}x{size} would hold "
                         f"{need / 2**30:,.1f} GiB of images in memory, more than the {MAX_GENERATED_BYTES // 2**30} "
                         f"GiB allowed; use fewer styles or contents, or a smaller size", field="contents")
    styles = make_styles(n_styles, seed)
    models = StyleModels(tuple(str(i + 1) for i in range(n_styles)), tuple(name for name, _ in styles))
    ids, arrays, labels, groups = [], [], [], []
    for c in range(n_content):
        crng = np.random.default_rng([seed, 3, c])
        base = photo_content(size, crng) if content == "mixed" and c % 2 else draw_content(size, crng)
        x = base.astype(np.float64) / 255.0
        for s, (_, style) in enumerate(styles):
            r = np.random.default_rng([seed, 4, c, s])
            y = np.clip(style(x, r), 0, 1)
            ids.append(f"gen-{c + 1}-{s + 1}")
            arrays.append(np.round(y * 255).astype(np.uint8))
            labels.append(str(s + 1))
            groups.append(str(c + 1))
    return StyleDataset(ids, models, arrays=arrays, labels=labels, groups=groups, source="generated")
