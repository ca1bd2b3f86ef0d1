# SPDX-License-Identifier: MIT
"""Reads scripts/vm-profile.sh's traces and prints where a null job's time
goes: SUBMIT's callees (guest function_graph), a null job's path across the
guest's CPUs (guest ftrace timeline) and the doorbell-to-interrupt chains of
vnpu and virtio-blk on the host (perf uprobes on QEMU). Medians throughout.
"""
import argparse
import collections
import re
import statistics

GRAPH = re.compile(r"\s*(\d+)\)\s+(?:[-+!#*@$]\s*)?(?:([\d.]+) us)?\s*\|(\s*)(.*)$")
TIMELINE = re.compile(
    r"\s*(\S.*?)-(\d+)\s+\[(\d+)\]\s+\S+\s+([\d.]+):\s+(\w+)(?::\s*(.*)|\s+<-(\S+))?$")
HOST = re.compile(r"\s*(\d+)\s+([\d.]+):\s+probe_vnpu_profile:(\w+):\s*\(\w+\)\s*(.*)$")
DOORBELLS = (0x3000, 0x4000)  # BAR0 page 3 (docs/hw-spec.md 2.4)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def sections(path):
    out, cur = collections.defaultdict(list), None
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        if line.startswith("=== "):
            cur = line[4:]
        elif cur:
            out[cur].append(line)
    return out


def submit_graph(lines):
    """Per callee of vnpu_submit_ioctl: median time per SUBMIT."""
    calls, cur, opened = [], None, None
    for line in lines:
        m = GRAPH.match(line)
        if not m:
            continue
        dur, indent, body = m.group(2), len(m.group(3)), m.group(4)
        if body.startswith("vnpu_submit_ioctl"):
            cur = collections.Counter()
            calls.append(cur)
        elif cur is None:
            continue
        elif indent <= 2 and body.startswith("}"):
            cur["(whole SUBMIT)"] = float(dur)
            cur = None
        elif body.endswith("{"):
            opened = body.split("(")[0].strip()
        elif dur:
            name = opened if body.startswith("}") else body.split("(")[0].strip()
            cur[name] += float(dur)
    calls = [c for c in calls if "(whole SUBMIT)" in c]
    names = {n for c in calls for n in c}
    rows = sorted(((med([c[n] for c in calls]), n) for n in names), reverse=True)
    print(f"SUBMIT's callees, {len(calls)} SUBMITs of one NOP under function_graph"
          " (us, medians; the tracer's cost included, read as shares):")
    total = rows[0][0] if rows else 0
    for t, n in rows:
        if t >= 0.02 * total:
            print(f"  {t:8.1f}  {100 * t / total:5.1f} %  {n}")


def timeline(lines):
    """A null job's steps across the guest's CPUs."""
    ev = []
    for line in lines:
        m = TIMELINE.match(line)
        if m:
            comm, _, cpu, ts, what, rest, _ = m.groups()
            ev.append((float(ts) * 1e6, int(cpu), comm.strip(), what, rest or ""))
    steps = collections.defaultdict(list)
    same_cpu = collections.Counter()
    jobs = 0
    for i, (t0, cpu0, comm0, what, _) in enumerate(ev):
        if what != "vnpu_submit_ioctl":
            continue
        marks = {"submit": (t0, cpu0)}
        for t, cpu, comm, w, rest in ev[i + 1:]:
            if w == "vnpu_submit_ioctl":
                break
            key = {"vnpu_run_job": "run_job", "vnpu_hwq_push": "doorbell",
                   "vnpu_irq_queue_hard": "interrupt",
                   "drm_syncobj_timeline_wait_ioctl": "wait"}.get(w)
            if key and key not in marks:
                marks[key] = (t, cpu)
            if (w == "sys_exit" and "wait" in marks and comm == comm0
                    and "woken" not in marks and t > marks["wait"][0]):
                marks["woken"] = (t, cpu)
        order = ["submit", "run_job", "doorbell", "interrupt", "woken"]
        if not all(k in marks for k in order):
            continue
        jobs += 1
        for a, b in zip(order, order[1:]):
            steps[f"{a} -> {b}"].append(marks[b][0] - marks[a][0])
        same_cpu["run_job on the submitter's CPU"] += marks["run_job"][1] == cpu0
        same_cpu["interrupt on the waiter's CPU"] += (
            marks["interrupt"][1] == marks["woken"][1])
    print(f"A null job across the guest's CPUs, {jobs} jobs (us, medians;"
          " function entries, ftrace on):")
    for k, v in steps.items():
        print(f"  {med(v):8.1f}  {k}")
    for k, n in same_cpu.items():
        print(f"  {n} of {jobs}: {k}")


def host_chains(path):
    ev = []
    for line in open(path, errors="replace"):
        m = HOST.match(line)
        if m:
            tid, ts, name, args = m.groups()
            addr = re.search(r"addr=0x([0-9a-f]+)", args)
            ev.append((float(ts) * 1e6, int(tid), name,
                       int(addr.group(1), 16) if addr else None))
    # vnpu: doorbell write -> completion raised -> vector -> MSI -> guest's
    # first register access (the handler's IRQ_STATUS write), per path: the
    # command run in the doorbell's write (vCPU) or by a device thread
    paths = collections.defaultdict(lambda: collections.defaultdict(list))
    names = ["doorbell -> completion raised", "raised -> msix_notify",
             "msix_notify -> APIC", "APIC -> guest handler's first access"]
    want = ["sim_raise_irq_locked", "msix_notify", "apic_send_msi",
            "vnpu_regs_write"]
    for i, (t0, tid0, name, addr) in enumerate(ev):
        if name != "vnpu_regs_write" or addr is None or not (
                DOORBELLS[0] <= addr < DOORBELLS[1]):
            continue
        got, deferred = [], False
        for t, tid, nm, a in ev[i + 1:]:
            if t - t0 > 5000 or len(got) == len(want):
                break
            if nm == "vnpu_irq_bh" and got:
                deferred = True
            if nm == want[len(got)]:
                got.append((t, tid))
        if len(got) < len(want):
            continue
        path = ("run in the doorbell's write (vCPU thread), delivered "
                + ("by the main loop" if deferred else "at once"))
        if got[0][1] != tid0:
            path = ("run by a device thread, delivered "
                    + ("by the main loop" if deferred else "at once"))
        steps = paths[path]
        prev = t0
        for (t, _), k in zip(got, names):
            steps[k].append(t - prev)
            prev = t
        steps["doorbell -> guest handler"].append(prev - t0)
    print("vnpu on the host (us, medians; uprobes on, a few us each):")
    for path, steps in paths.items():
        print(f"  {len(steps[names[0]])} commands {path}:")
        for k, v in steps.items():
            print(f"    {med(v):8.1f}  {k}")
    steps = collections.defaultdict(list)
    want = ["virtio_blk_handle_output", "virtio_blk_req_complete",
            "virtio_notify_irqfd", "msix_notify", "apic_send_msi"]
    n = 0
    for i, (t0, _, name, _) in enumerate(ev):
        if name != want[0]:
            continue
        got = [t0]
        for t, _, nm, _ in ev[i + 1:]:
            if t - t0 > 5000 or len(got) == len(want):
                break
            if nm == want[len(got)]:
                got.append(t)
        if len(got) < len(want):
            continue
        n += 1
        for a, b, ta, tb in zip(want, want[1:], got, got[1:]):
            steps[f"{a} -> {b}"].append(tb - ta)
    print(f"virtio-blk on the host, {n} requests (us, medians; from the"
          " iothread's dispatch, its ioeventfd wake-up not seen):")
    for k, v in steps.items():
        print(f"  {med(v):8.1f}  {k}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--guest", required=True)
    ap.add_argument("--host")
    a = ap.parse_args()
    sec = sections(a.guest)
    submit_graph(sec.get("submit-graph", []))
    timeline(sec.get("timeline", []))
    if a.host:
        host_chains(a.host)


if __name__ == "__main__":
    main()
