"""Matrix-free APGD on the dual in (z, eta): compliance K moved out of H into the dual.
min_{z in K, eta} 1/2 w^T M2^-1 w + 1/2 eta^T K^-1 eta - r^T z, w = p + C^T z - J^T eta."""
import sys, json, numpy as np, scipy.sparse as sp, time
d = json.load(open(sys.argv[1])); maxit = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
n, m = d['n'], d['m']
Hu = sp.csc_matrix((d['h_nzval'], d['h_rowval'], d['h_colptr']), shape=(n, n))
H = (Hu + Hu.T - sp.diags(Hu.diagonal())).tocsr()
C = sp.csc_matrix((d['c_nzval'], d['c_rowval'], d['c_colptr']), shape=(m, n)).tocsr(); CT = C.T.tocsr()
p, r = np.array(d['p']), np.array(d['r']); tol = d['tolerance']
B = np.array(d['bodies']); K = np.array(d['contacts']); nb = len(B); nc = len(K)
# M2^-1 blocks
Minv = np.zeros((nb, 6, 6))
for b in range(nb):
    Minv[b, :3, :3] = np.eye(3) / (2 * B[b, 0]); Minv[b, 3:, 3:] = np.linalg.inv(2 * B[b, 1:10].reshape(3, 3).T)
rows, cols, vals = [], [], []
kap = np.zeros(3 * nc)
for k, c in enumerate(K):
    i, j = int(c[0]), int(c[1]); pt = c[2:5]; basis = [c[5:8], c[8:11], c[11:14]]
    kap[3 * k:3 * k + 3] = [c[14], c[15], c[15]]
    for bi, sign in ((i, 1.0), (j, -1.0)):
        if bi < 0: continue
        rr = pt - B[bi, 10:13]
        for a, dv in enumerate(basis):
            t = np.cross(rr, dv)
            for q in range(3):
                rows += [3 * k + a, 3 * k + a]; cols += [6 * bi + q, 6 * bi + 3 + q]; vals += [sign * dv[q], sign * t[q]]
J = sp.csr_matrix((vals, (rows, cols)), shape=(3 * nc, n)); JT = J.T.tocsr()
M2 = sp.block_diag([np.linalg.inv(Minv[b]) for b in range(nb)]).tocsr()
Hrec = M2 + JT @ sp.diags(kap) @ J
print('H reconstruction rel err', abs(Hrec - H).max() / abs(H).max(), 'kappa range', kap.min(), kap.max())
def minv(w):
    return np.einsum('bij,bj->bi', Minv, w.reshape(nb, 6)).ravel()
soc = []; nn = []; row = 0
for t, k in d['cones']:
    if t == 1: soc.append(row)
    else: nn.extend(range(row, row + k))
    row += k
soc = np.array(soc, dtype=int); nn = np.array(nn, dtype=int)
def proj(z):
    z = z.copy()
    if len(nn): z[nn] = np.maximum(z[nn], 0)
    if len(soc):
        t = z[soc]; v = np.stack([z[soc + 1], z[soc + 2]], 1); nv = np.linalg.norm(v, axis=1)
        inside = nv <= t; polar = nv <= -t; mid = ~(inside | polar); a = (t + nv) / 2
        z[soc[polar]] = 0; z[soc[polar] + 1] = 0; z[soc[polar] + 2] = 0
        s = np.where(mid, a / np.maximum(nv, 1e-300), 0)
        z[soc[mid]] = a[mid]; z[soc[mid] + 1] = v[mid, 0] * s[mid]; z[soc[mid] + 2] = v[mid, 1] * s[mid]
    return z
hd = H.diagonal(); vfree = np.abs(C @ (p / hd)).max()
def cert(z, eta):
    x = minv(p + CT @ z - JT @ eta); cx = C @ x; s = cx - r
    V = max(np.abs(cx).max(), np.abs(r).max(), vfree)
    Cz = CT @ z; Hx = H @ x
    F = max(np.abs(Hx).max(), np.abs(p).max(), np.abs(Cz).max()); Z = max(np.abs(z).max(), F)
    stat = np.abs(Hx - p - Cz).max() / F
    primal = np.abs(proj(s) - s).max() / V
    comp = 0.0
    if len(soc): comp = max(comp, np.abs(z[soc] * s[soc] + z[soc + 1] * s[soc + 1] + z[soc + 2] * s[soc + 2]).max())
    if len(nn): comp = max(comp, np.abs(z[nn] * s[nn]).max())
    return stat, primal, comp / (Z * V)
kinv = 1.0 / kap
def grad(z, eta):
    x = minv(p + CT @ z - JT @ eta)
    return C @ x - r, -(J @ x) + kinv * eta
def hess(vz, ve):
    x = minv(CT @ vz - JT @ ve)
    return C @ x, -(J @ x) + kinv * ve
rng = np.random.default_rng(0); vz = rng.standard_normal(m); ve = rng.standard_normal(3 * nc)
for _ in range(40):
    a, b = hess(vz, ve); nrm = np.sqrt(a @ a + b @ b); L = nrm / np.sqrt(vz @ vz + ve @ ve); vz, ve = a / nrm, b / nrm
L *= 1.05; t = 1.0 / L
import scipy.sparse.linalg as sla
if len(sys.argv) > 3 and sys.argv[3] == 'warm':
    z = proj(np.array(d['z0'])); xw = sla.spsolve(H.tocsc(), p + CT @ z); eta = kap * (J @ xw)
else:
    z = np.zeros(m); eta = np.zeros(3 * nc)
print('start', ['%.1e' % v for v in cert(z, eta)])
yz, ye = z.copy(), eta.copy(); th = 1.0; t0 = time.time(); done = None
for k in range(1, maxit + 1):
    gz, ge = grad(yz, ye)
    zn = proj(yz - t * gz); en = ye - t * ge
    thn = (-th * th + th * np.sqrt(th * th + 4)) / 2; beta = th * (1 - th) / (th * th + thn)
    if gz @ (zn - z) + ge @ (en - eta) > 0:
        yz, ye, th = zn.copy(), en.copy(), 1.0
    else:
        yz, ye, th = zn + beta * (zn - z), en + beta * (en - eta), thn
    z, eta = zn, en
    if k % 100 == 0:
        c = cert(z, eta)
        if k % 500 == 0: print(k, ['%.1e' % v for v in c], flush=True)
        if max(c) <= tol: done = k; break
c = cert(z, eta)
print(f"{sys.argv[1].split('/')[-1]} m {m} contacts {nc}: {'certified at ' + str(done) if done else 'not certified in ' + str(maxit)}; stat {c[0]:.1e} primal {c[1]:.1e} comp {c[2]:.1e}; {time.time()-t0:.1f} s")
