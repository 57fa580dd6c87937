"""Expected result of tests/relay/run/resnet_block_float16.relay: every operator computed in
float64, rounded to float32, then to float16 (TVM's CPU target: float32 arithmetic, one
rounding per operator)."""
import json
import numpy as np

r = lambda x: np.asarray(x, np.float64).astype(np.float32).astype(np.float16)
rng = np.random.default_rng(16)
def q(shape, step):  # small multiples of `step`: exact in float16
    return r(rng.integers(-8, 9, size=shape) * step)

data = q((1, 2, 5, 5), 0.125)
w1 = q((4, 2, 3, 3), 0.0625); b1 = q((4,), 0.125)
w2 = q((4, 4, 3, 3), 0.0625); b2 = q((4,), 0.125)
wp = q((4, 2, 1, 1), 0.125)
fw = q((3, 4), 0.125); fb = q((3,), 0.125)

def conv(x, w, pad):
    x = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    n, c, h, wd = x.shape; o, _, kh, kw = w.shape
    oh, ow = h - kh + 1, wd - kw + 1
    out = np.zeros((n, o, oh, ow))
    for i in range(oh):
        for j in range(ow):
            out[:, :, i, j] = np.einsum('nchw,ochw->no', x[:, :, i:i+kh, j:j+kw], w.astype(np.float64))
    return r(out)

f = lambda a: a.astype(np.float64)
h = conv(data, w1, 1)
h = r(f(h) + f(b1)[None, :, None, None])
h = r(np.maximum(f(h), 0))
h = conv(h, w2, 1)
h = r(f(h) + f(b2)[None, :, None, None])
p = conv(data, wp, 0)
h = r(f(h) + f(p))
h = r(np.maximum(f(h), 0))
g = r(f(h).mean(axis=(2, 3), keepdims=True))
g = g.reshape(1, 4)
d = r(f(g) @ f(fw).T)
d = r(f(d) + f(fb))
e = np.exp(f(d) - f(d).max(axis=1, keepdims=True))
out = r(e / e.sum(axis=1, keepdims=True))
args = [data, w1, b1, w2, b2, wp, fw, fb]
print(json.dumps([a.astype(np.float64).tolist() for a in args]).replace(" ", "")[1:-1].replace(",", ", "))
print(out.astype(np.float64).tolist(), d.astype(np.float64).tolist())
