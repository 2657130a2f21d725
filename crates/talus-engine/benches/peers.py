#!/usr/bin/env python3
"""The thesis heaps in a game engine, for `benches/peers.rs` (issue 16).

    peers.py --engine pybullet|pybullet-multibody|rapier --n N --mu MU --steps S --data DIR

Builds the heap of `size_N.data` / `position_N.data` (boxes of density 5000 kg/m^3 thrown
onto the plane z = 0, g = 9.80665 m/s^2, dt = 1 ms, no restitution) in the engine, steps it
S times on one thread (only this loop is timed) and prints one JSON line: seconds,
median centre height and r95 (95th percentile of the horizontal distance of the centres
from their mean), m. A missing module (rapier3d's bindings also need numpy) prints
{"skipped": "..."}, with the pip command that installs it, and exits 0.
pybullet: 50 sequential-impulse iterations, each block a rigid body (btRigidBody,
`useMaximalCoordinates=True`: Bullet's classic rigid-body pipeline); pybullet-multibody:
the same with `createMultiBody`'s default, a Featherstone btMultiBody of one base (about
twice as slow on the heap N = 1000, mu = 0.5, with a similar heap). rapier3d: its default
parameters (TGS).
"""

import argparse
import json
import math
import os
import sys
import time


def numbers(path):
    with open(path) as f:
        return [[float(t) for t in line.split()] for line in f if line.strip()]


def heap(data, n):
    sizes = numbers(os.path.join(data, f"size_{n}.data"))
    pos = numbers(os.path.join(data, f"position_{n}.data"))
    blocks = []
    for k in range(n):
        p, v, w, i, j, kk = (pos[6 * k + r] for r in range(6))
        # Rotation matrix with columns i, j, k (body axes in the world), as Talus reads it.
        m = [[i[0], j[0], kk[0]], [i[1], j[1], kk[1]], [i[2], j[2], kk[2]]]
        blocks.append((sizes[k], p, v, w, quaternion(m)))
    return blocks


def quaternion(m):
    """(x, y, z, w) of a rotation matrix."""
    t = m[0][0] + m[1][1] + m[2][2]
    if t > 0:
        s = math.sqrt(t + 1.0) * 2
        return ((m[2][1] - m[1][2]) / s, (m[0][2] - m[2][0]) / s, (m[1][0] - m[0][1]) / s, 0.25 * s)
    if m[0][0] > m[1][1] and m[0][0] > m[2][2]:
        s = math.sqrt(1.0 + m[0][0] - m[1][1] - m[2][2]) * 2
        return (0.25 * s, (m[0][1] + m[1][0]) / s, (m[0][2] + m[2][0]) / s, (m[2][1] - m[1][2]) / s)
    if m[1][1] > m[2][2]:
        s = math.sqrt(1.0 + m[1][1] - m[0][0] - m[2][2]) * 2
        return ((m[0][1] + m[1][0]) / s, 0.25 * s, (m[1][2] + m[2][1]) / s, (m[0][2] - m[2][0]) / s)
    s = math.sqrt(1.0 + m[2][2] - m[0][0] - m[1][1]) * 2
    return ((m[0][2] + m[2][0]) / s, (m[1][2] + m[2][1]) / s, 0.25 * s, (m[1][0] - m[0][1]) / s)


def scaled_axis(q):
    """Rotation vector (axis times angle) of a unit quaternion (x, y, z, w)."""
    x, y, z, w = q
    s = math.sqrt(x * x + y * y + z * z)
    if s < 1e-15:
        return (0.0, 0.0, 0.0)
    angle = 2.0 * math.atan2(s, w)
    return (x / s * angle, y / s * angle, z / s * angle)


def stats(centres):
    n = len(centres)
    mx = sum(c[0] for c in centres) / n
    my = sum(c[1] for c in centres) / n
    z = sorted(c[2] for c in centres)
    r = sorted(math.hypot(c[0] - mx, c[1] - my) for c in centres)
    q = lambda v, p: v[int(round((len(v) - 1) * p))]
    return q(z, 0.5), q(r, 0.95)


def run_pybullet(blocks, mu, steps, maximal=True):
    import pybullet as p

    p.connect(p.DIRECT)
    p.setGravity(0, 0, -9.80665)
    p.setTimeStep(1e-3)
    p.setPhysicsEngineParameter(numSolverIterations=50, numSubSteps=0)
    ground = p.createMultiBody(0, p.createCollisionShape(p.GEOM_PLANE))
    p.changeDynamics(ground, -1, lateralFriction=mu, restitution=0.0)
    ids = []
    for (a, b, c), pos, v, w, q in blocks:
        shape = p.createCollisionShape(p.GEOM_BOX, halfExtents=[a / 2, b / 2, c / 2])
        body = p.createMultiBody(
            5000.0 * a * b * c,
            shape,
            basePosition=pos,
            baseOrientation=q,
            useMaximalCoordinates=maximal,
        )
        p.changeDynamics(
            body, -1, lateralFriction=mu, restitution=0.0, linearDamping=0.0, angularDamping=0.0
        )
        p.resetBaseVelocity(body, v, w)
        ids.append(body)
    t0 = time.perf_counter()
    for _ in range(steps):
        p.stepSimulation()
    seconds = time.perf_counter() - t0
    centres = [p.getBasePositionAndOrientation(b)[0] for b in ids]
    kind = "rigid bodies" if maximal else "multibodies"
    return seconds, centres, f"50 SI iterations, {kind}"


def run_rapier(blocks, mu, steps):
    import rapier3d as r

    world = r.PhysicsWorld(gravity=(0.0, 0.0, -9.80665))
    world.set_num_threads(1)
    world.integration_parameters.dt = 1e-3
    world.add_collider(r.Collider.halfspace((0.0, 0.0, 1.0)).friction(mu).restitution(0.0))
    handles = []
    for (a, b, c), pos, v, w, q in blocks:
        body = r.RigidBody.dynamic(
            translation=tuple(pos),
            rotation=scaled_axis(q),
            linvel=tuple(v),
            angvel=tuple(w),
        ).can_sleep(False)
        col = r.Collider.cuboid(a / 2, b / 2, c / 2).density(5000.0).friction(mu).restitution(0.0)
        handles.append(world.add_body(body, colliders=[col]))
    iters = world.integration_parameters.num_solver_iterations
    t0 = time.perf_counter()
    for _ in range(steps):
        world.step()
    seconds = time.perf_counter() - t0
    centres = []
    for h in handles:
        t = world.rigid_bodies[h].translation
        centres.append((t[0], t[1], t[2]) if not hasattr(t, "x") else (t.x, t.y, t.z))
    return seconds, centres, f"{iters} solver iterations"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--engine", required=True, choices=["pybullet", "pybullet-multibody", "rapier"])
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--mu", type=float, required=True)
    ap.add_argument("--steps", type=int, default=1000)
    ap.add_argument("--data", required=True)
    a = ap.parse_args()
    # rapier3d's bindings need numpy at run time without declaring it: without it they
    # import, then panic on the first world (seen with rapier3d 0.36.1 from PyPI).
    modules = ["rapier3d", "numpy"] if a.engine == "rapier" else ["pybullet"]
    for module in modules:
        try:
            __import__(module)
        except ImportError as e:
            why = f"python module {module} not installed ({e}); pip install {' '.join(modules)}"
            print(json.dumps({"skipped": why}))
            return
    blocks = heap(a.data, a.n)
    if a.engine == "rapier":
        seconds, centres, note = run_rapier(blocks, a.mu, a.steps)
    else:
        seconds, centres, note = run_pybullet(blocks, a.mu, a.steps, a.engine == "pybullet")
    median_z, r95 = stats(centres)
    print(json.dumps({"seconds": seconds, "median_z": median_z, "r95": r95, "note": note}))


if __name__ == "__main__":
    sys.exit(main())
