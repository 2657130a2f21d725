"""APGD (Nesterov + adaptive restart, fixed step 1/L) on the dual of an ADMM island dump:
min_{z in K} 1/2 (p + C^T z)^T H^-1 (p + C^T z) - r^T z. Counts iterations to the certificate."""
import sys, json, numpy as np, scipy.sparse as sp, scipy.sparse.linalg as sla, time
d = json.load(open(sys.argv[1])); maxit = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
n, m = d['n'], d['m']
Hu = sp.csc_matrix((d['h_nzval'], d['h_rowval'], d['h_colptr']), shape=(n, n))
H = (Hu + Hu.T - sp.diags(Hu.diagonal())).tocsc()
C = sp.csc_matrix((d['c_nzval'], d['c_rowval'], d['c_colptr']), shape=(m, n)).tocsr()
CT = C.T.tocsr()
p, r = np.array(d['p']), np.array(d['r']); z0 = np.array(d['z0']); tol = d['tolerance']
solve = sla.factorized(H)
soc = []; nn = []; row = 0
for t, k in d['cones']:
    if t == 1: soc.append(row)
    else: nn.extend(range(row, row + k))
    row += k
soc = np.array(soc); nn = np.array(nn, dtype=int)
def proj(z):
    z = z.copy()
    if len(nn): z[nn] = np.maximum(z[nn], 0)
    if len(soc):
        t = z[soc]; v = np.stack([z[soc + 1], z[soc + 2]], 1); nv = np.linalg.norm(v, axis=1)
        inside = nv <= t; polar = nv <= -t; mid = ~(inside | polar)
        a = (t + nv) / 2
        z[soc[polar]] = 0; z[soc[polar] + 1] = 0; z[soc[polar] + 2] = 0
        s = np.where(mid, a / np.maximum(nv, 1e-300), 0)
        z[soc[mid]] = a[mid]; z[soc[mid] + 1] = v[mid, 0] * s[mid]; z[soc[mid] + 2] = v[mid, 1] * s[mid]
    return z
hd = H.diagonal(); vfree = np.abs(C @ (p / hd)).max()
def cert(z):
    x = solve(p + CT @ z); cx = C @ x; s = cx - r
    V = max(np.abs(cx).max(), np.abs(r).max(), vfree)
    F = max(np.abs(H @ x).max(), np.abs(p).max(), np.abs(CT @ z).max()); Z = max(np.abs(z).max(), F)
    ps = proj(s); primal = np.abs(ps - s).max() / V  # dist (inf-norm proxy)
    comp = 0.0
    if len(soc):
        comp = max(comp, np.abs(z[soc] * s[soc] + z[soc + 1] * s[soc + 1] + z[soc + 2] * s[soc + 2]).max())
    if len(nn): comp = max(comp, np.abs(z[nn] * s[nn]).max())
    return primal, comp / (Z * V), s
# L = lambda_max(C H^-1 C^T) by power iteration
v = np.random.default_rng(0).standard_normal(m); 
for _ in range(30):
    w = C @ solve(CT @ v); L = np.linalg.norm(w) / np.linalg.norm(v); v = w / np.linalg.norm(w)
L *= 1.05; t = 1.0 / L
for start, zs in [('warm', proj(z0)), ('cold', np.zeros(m))]:
    z = zs.copy(); y = z.copy(); th = 1.0; t0 = time.time(); done = None
    for k in range(1, maxit + 1):
        x = solve(p + CT @ y); g = C @ x - r
        zn = proj(y - t * g)
        thn = (-th * th + th * np.sqrt(th * th + 4)) / 2
        beta = th * (1 - th) / (th * th + thn)
        if g @ (zn - z) > 0:  # adaptive restart
            y = zn.copy(); th = 1.0
        else:
            y = zn + beta * (zn - z); th = thn
        z = zn
        if k in (1, 2, 5, 10, 20, 50) or k % 100 == 0:
            pr, co, _ = cert(z)
            if max(pr, co) <= tol: done = k; break
    pr, co, _ = cert(z)
    print(f"{sys.argv[1].split('/')[-1]} m {m} {start}: {'certified at ' + str(done) if done else 'not certified in ' + str(maxit)} iterations; primal {pr:.1e} comp {co:.1e}; {time.time()-t0:.1f} s")
