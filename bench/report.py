#!/usr/bin/python3
# ===- report.py - Tables and roofline of one benchmark run ---------------=== #
#
# Merges RESULTS/results.json (attnc-bench: machine roofs, attnc, the naive
# loop, OpenBLAS) with RESULTS/torch.json (torch_baseline.py) and writes
# RESULTS/table.md (machine, attnc per configuration with % of roof and
# speed-ups, the baselines) and RESULTS/roofline.png (arithmetic intensity
# against GFLOP/s under the measured roofs, matplotlib's Agg back end).
#
# ===----------------------------------------------------------------------=== #
"""Usage: /usr/bin/python3 bench/report.py RESULTS_DIR"""

import json
import os
import sys

BASELINES = [("naive", "naive loop"), ("openblas", "OpenBLAS"), ("torch", "PyTorch")]
STATUS_TEXT = {
    "unsupported": "not supported by this attnc yet",
    "failed": "failed",
    "skipped": "not run",
    "wrong": "WRONG RESULT",
}


def load(results_dir):
    with open(os.path.join(results_dir, "results.json")) as f:
        results = json.load(f)
    torch_path = os.path.join(results_dir, "torch.json")
    torch = {"available": False, "configs": {}, "note": "PyTorch baseline not run"}
    if os.path.exists(torch_path):
        with open(torch_path) as f:
            torch = json.load(f)
    for c in results["configs"]:
        t = torch["configs"].get(c["id"])
        if t is None and c.get("cache", "none") != "none":
            t = {"status": "skipped", "note": "no PyTorch baseline for KV-cache rows"}
        if t is None:
            t = {"status": "skipped", "note": torch.get("note", "PyTorch baseline not run")}
        c["impls"]["torch"] = t
    return results, torch


def peak_of(results, threads_key="used"):
    """The best FP32 peak the machine measured (AVX-512 where present)."""
    peaks = results["machine"]["peak_gflops"]
    for isa in ("avx512f", "avx2+fma"):
        if isa in peaks:
            peak = peaks[isa].get(threads_key, peaks[isa]["all"])
            if threads_key != "1":
                # Other processes can only slow the multi-thread probe down, so
                # the cores' peak is at least threads x the 1-thread reading.
                peak = max(peak, results["threads"] * peaks[isa]["1"])
            return isa, peak
    return "none", float("nan")


def timed(impl):
    return impl.get("median_s") if impl.get("status") in ("ok", "wrong") else None


def fmt_ms(seconds):
    ms = seconds * 1e3
    return "%#.3g" % ms if ms < 10 else "%.1f" % ms if ms < 1000 else "%.0f" % ms


def fmt_speedup(base, ours, approx=False):
    if base is None or ours is None:
        return "—"
    return ("~" if approx else "") + "%.2fx" % (base / ours)


def roof_cell(config, seconds, results):
    """% of FMA peak, or for decode: GB/s of K+V read and % of the read
    bandwidth probed beside the row (triad of the run's start when absent);
    paged caches also against a read of pages as scattered as theirs."""
    if config["memory_bound"]:
        gbs = config["kv_bytes"] / seconds / 1e9
        if config.get("read_gbs"):
            cell = "%.1f GB/s = %.0f%% of read bw (%.1f GB/s)" % (
                gbs, 100 * gbs / config["read_gbs"], config["read_gbs"])
            if config.get("paged_read_gbs"):
                cell += ", %.0f%% of a read of pages as scattered (%.1f GB/s)" % (
                    100 * gbs / config["paged_read_gbs"], config["paged_read_gbs"])
            return cell
        return "%.1f GB/s = %.0f%% of triad" % (gbs, 100 * gbs / results["machine"]["triad_gbs"].get("used", results["machine"]["triad_gbs"]["all"]))
    _, peak = peak_of(results)
    return "%.1f%% of peak" % (100 * config["flops"] / seconds / 1e9 / peak)


def cpu_cells(config, impl, results):
    """Load-independent view: GFLOP per CPU-second of the process (every
    thread's busy time, not the wall time) as a % of the 1-thread peak, and
    OpenBLAS's CPU time over attnc's. Memory-bound rows get none: bandwidth
    is shared however the cores are."""
    cpu = impl.get("cpu_median_s")
    if config["memory_bound"] or not cpu:
        return ["—", "—"]
    _, peak1 = peak_of(results, "1")
    eff = "%.0f%%" % (100 * config["flops"] / cpu / 1e9 / peak1)
    blas = config["impls"].get("openblas", {})
    ratio = "—"
    if impl.get("status") == "ok" and blas.get("status") == "ok" and blas.get("cpu_median_s"):
        ratio = "%.2fx" % (blas["cpu_median_s"] / cpu)
    return [eff, ratio]


def status_cell(impl):
    text = STATUS_TEXT.get(impl.get("status"), impl.get("status", "?"))
    return text


def machine_table(results, torch):
    m = results["machine"]
    extra = results["threads"] not in (1, m["cpus"])
    cols = ["1 thread", "%d threads (all CPUs)" % m["cpus"]] + (
        ["%d threads (this run)" % results["threads"]] if extra else [])
    keys = ["1", "all"] + (["used"] if extra else [])
    lines = ["| measured in this run | " + " | ".join(cols) + " |", "|---" * (len(cols) + 1) + "|"]
    for isa, p in m["peak_gflops"].items():
        what = ("BF16 dot-product peak (vdpbf16ps, f32 sums)" if isa == "avx512bf16"
                else "FP32 FMA peak, %s" % isa)
        lines.append("| %s | " % what + " | ".join("%.0f GFLOP/s" % p[k] for k in keys) + " |")
    t = m["triad_gbs"]
    lines.append("| STREAM triad bandwidth | " + " | ".join("%.1f GB/s" % t[k] for k in keys) + " |")
    torch_text = ("PyTorch %s, %s" % (torch.get("version"), torch.get("build", "").lstrip("- "))
                  if torch.get("available") else torch.get("note", "PyTorch not run"))
    notes = [
        "CPU: %s, %d CPUs; every implementation runs on %d threads (the harness's pinned, Halide's and PyTorch's by count); seed %s; %s." % (
            m["cpu"], m["cpus"], results["threads"], results["seed"], results["timestamp"]),
        "OpenBLAS: %s. Vectorized softmax: %s. %s." % (m["openblas"], m["softmax_isa"], torch_text),
    ]
    return lines, notes


def attnc_table(results):
    isa, peak = peak_of(results)
    head = ("| configuration | attnc ms | GFLOP/s | of roof | compile s | vs naive | vs OpenBLAS | vs PyTorch "
            "| per busy core | vs OpenBLAS, CPU time |\n"
            "|---|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    rows, notes = [head], []
    for c in results["configs"]:
        a = c["impls"]["attnc"]
        t = timed(a)
        compile_s = "%.1f" % a["compile_s"] if "compile_s" in a and timed(a) else "—"
        if t is None:
            note = a.get("note", "")
            notes.append("`%s`: %s%s" % (c["id"], status_cell(a), (": " + note) if note else ""))
            rows.append("| %s | %s | — | — | %s | — | — | — | — | — |" % (c["label"], status_cell(a), compile_s))
            continue
        label = c["label"] + (" **(WRONG RESULT)**" if a["status"] == "wrong" else "")
        if a["status"] == "wrong":
            notes.append("`%s`: %s" % (c["id"], a.get("note", "")))
        cells = [label, fmt_ms(t), "%.1f" % (c["flops"] / t / 1e9), roof_cell(c, t, results), compile_s]
        for key, _ in BASELINES:  # no speed-up for a wrong result
            ok = a["status"] == "ok" and c["impls"][key].get("status") == "ok"
            single = c["impls"][key].get("runs") == 1
            cells.append(fmt_speedup(timed(c["impls"][key]), t, single) if ok else "—")
        cells += cpu_cells(c, a, results)
        rows.append("| " + " | ".join(cells) + " |")
    return rows, notes


def baseline_table(results):
    head = ("| configuration | naive ms | OpenBLAS ms | OpenBLAS GFLOP/s | PyTorch ms | PyTorch GFLOP/s | "
            "max error vs reference (naive / OpenBLAS / PyTorch) |\n|---|---:|---:|---:|---:|---:|---|")
    rows, notes = [head], []
    for c in results["configs"]:
        cells = [c["label"]]
        errs = []
        for key, name in BASELINES:
            impl = c["impls"][key]
            t = timed(impl)
            if t is None:
                cells.append(status_cell(impl))
                if impl.get("note") and not (key == "torch" and c.get("cache", "none") != "none"):
                    notes.append("`%s`, %s: %s" % (c["id"], name, impl["note"]))
            else:
                single = " (1 run)" if impl.get("runs") == 1 else ""
                cells.append(fmt_ms(t) + single + (" **WRONG**" if impl["status"] == "wrong" else ""))
                if impl.get("note") and key != "naive":
                    notes.append("`%s`, %s: %s" % (c["id"], name, impl["note"]))
            if key != "naive":
                rate = "—"
                if t:
                    rate = "%.1f" % (c["flops"] / t / 1e9)
                    if c["memory_bound"]:
                        rate += " (%.1f GB/s)" % (c.get("baseline_kv_bytes", c["kv_bytes"]) / t / 1e9)
                cells.append(rate)
            err = impl.get("max_err")
            errs.append("ref" if err is None or err < 0 else "inf/nan" if err >= 1e30 else "%.1e" % err)
        cells.append(" / ".join(errs) + " (tol %.0e)" % c["tolerance"])
        if c.get("dtype", "f32") != "f32" or c.get("kv_dtype", "f32") != "f32":
            notes.append("`%s`: the baselines run in f32 on the widened 16-bit inputs "
                         "(what a user without 16-bit kernels does after converting)" % c["id"])
        rows.append("| " + " | ".join(cells) + " |")
    caches = [c["id"] for c in results["configs"] if c.get("cache", "none") != "none"]
    if caches:
        notes.append("%s: OpenBLAS attends each sequence on its own over a contiguous K and V "
                     "(its cache rows, then its new rows, which the timed run copies in): what a "
                     "user without KV-cache kernels runs. No PyTorch baseline for these rows" % (
                         ", ".join("`%s`" % i for i in caches)))
    return rows, notes


def cache_notes(results):
    """KV-cache rows measured against another row of the run (compare_to):
    the other row's time over this one's, and this row's time over what its
    K+V bytes predict at the other row's GB/s."""
    by_id = {c["id"]: c for c in results["configs"]}
    notes = []
    for c in results["configs"]:
        ref = by_id.get(c.get("compare_to") or "")
        if ref is None:
            continue
        t, t_ref = timed(c["impls"]["attnc"]), timed(ref["impls"]["attnc"])
        if not t or not t_ref or c["impls"]["attnc"]["status"] != "ok" or \
                ref["impls"]["attnc"]["status"] != "ok":
            continue
        gbs_ref = ref["kv_bytes"] / t_ref / 1e9
        predicted = c["kv_bytes"] / (gbs_ref * 1e9)
        notes.append("`%s` against `%s`: %.2fx its speed (%s ms vs %s ms); %s ms is %.2fx the "
                     "%s ms that its %.2f GB of K+V predict at `%s`'s %.1f GB/s" % (
                         c["id"], ref["id"], t_ref / t, fmt_ms(t), fmt_ms(t_ref), fmt_ms(t),
                         t / predicted, fmt_ms(predicted), c["kv_bytes"] / 1e9, ref["id"], gbs_ref))
    return notes


def pair_lines(results):
    """Rows timed again in alternation after every row (attnc-bench's pairs):
    the ratios of the targets that compare two rows, free of the drift
    between rows timed minutes apart."""
    pairs = results.get("pairs") or []
    if not pairs:
        return []
    by_id = {c["id"]: c for c in results["configs"]}
    out = ["## Rows timed in alternation", "",
           "After every row, each pair again, one call of each in turn (a, b, b, a, ...); medians. "
           "*b / a*: b's time / a's time (a's speed-up over b).", "",
           "| a | b | a ms | b ms | b / a | a GFLOP/s / b GFLOP/s | rounds |", "|---|---|---:|---:|---:|---:|---:|"]
    for p in pairs:
        a, b = by_id.get(p["a"]), by_id.get(p["b"])
        if not a or not b:
            continue
        ta, tb = p["a_median_s"], p["b_median_s"]
        gf = (a["flops"] / ta) / (b["flops"] / tb)
        out.append("| `%s` | `%s` | %.3f | %.3f | %.3f | %.1f%% | %d |" % (
            p["a"], p["b"], ta * 1e3, tb * 1e3, tb / ta, 100 * gf, p["rounds"]))
    return out + [""]


def python_overhead_table(results_dir):
    """The Python package's call overhead (python_overhead.py), if measured."""
    path = os.path.join(results_dir, "python_overhead.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        r = json.load(f)
    c = r["c_run_s"]
    us = lambda s: "%.1f" % (s * 1e6)
    rows = ["## Call overhead (%s)" % r["kernel"], "",
            "| call | µs per call | over the C `NAME_run` (µs) |", "|---|---:|---:|"]
    for label, key in (("C `NAME_run`", "c_run_s"), ("libattnrt (`attnc-run --bench`)", "attnc_run_s"),
                       ("Python, `out=` given", "python_out"),
                       ("Python, output allocated", "python_alloc")):
        rows.append("| %s | %s | %s |" % (label, us(r[key]), us(r[key] - c)))
    return rows + [""]


def backward_table(results_dir, results):
    """Training rows (backward.py), if measured: % of the FMA peak with the
    backward's FLOPs counted as 2.5x the forward's, and PyTorch's autograd."""
    path = os.path.join(results_dir, "backward.json")
    if not os.path.exists(path):
        return []
    with open(path) as f:
        r = json.load(f)
    isa, peak = peak_of(results)
    rows = ["## Training: `NAME_backward`", "",
            "Backward FLOPs counted as 2.5x the forward's (FlashAttention-2's convention). "
            "*vs PyTorch*: PyTorch autograd's backward through matmul-softmax-matmul (f32, "
            "same threads) / attnc's backward.", "",
            "| row | forward ms | backward ms | backward GFLOP/s | of %s peak | PyTorch ms | vs PyTorch |"
            % isa, "|---|---:|---:|---:|---:|---:|---:|"]
    for row in r["rows"]:
        gflops = row["backward_flops"] / row["backward_s"] / 1e9
        t = row.get("torch_backward_s")
        rows.append("| %s | %s | %s | %.1f | %.0f%% | %s | %s |" % (
            row["id"], fmt_ms(row["forward_s"]), fmt_ms(row["backward_s"]), gflops,
            100 * gflops / peak, fmt_ms(t) if t else "", "%.2fx" % (t / row["backward_s"]) if t else ""))
    m = r["memory"]
    rows += ["", "Peak memory of one backward call at N=%d (H=%d, D=%d, causal) beyond its "
             "arguments: %.1f MiB." % (m["N"], m["H"], m["D"], m["extra_mib"]), ""]
    return rows


def write_table(results_dir, results, torch, with_roofline):
    m_lines, m_notes = machine_table(results, torch)
    a_rows, a_notes = attnc_table(results)
    a_notes += cache_notes(results)
    b_rows, b_notes = baseline_table(results)
    isa, _ = peak_of(results)
    out = ["# attnc benchmark, %s%s" % (results["timestamp"], " (--quick)" if results["quick"] else ""), ""]
    out += m_lines + [""] + ["- " + n for n in m_notes] + [""]
    out += ["## attnc", "",
            "Median of >= 5 runs after warm-up. GFLOP/s count 2 per multiply-add over visible (query, key) "
            "pairs only. *of roof*: %% of the %s FMA peak on the run's threads (the larger of that probe and threads x the "
            "1-thread probe, since a busy machine only slows a probe down), or for decode (memory bound) the "
            "K+V bytes read per second and %% of a read-bandwidth probe (two 512 MiB arrays) taken right before and after "
            "the row, the better of the two, since this machine's bandwidth drifts with its neighbours. *vs X*: X's time / attnc's time "
            "(> 1 means attnc is faster). Compile s: one `attnc -o kernel.so` run. *per busy core*: FLOPs "
            "per second of the process's CPU time (all threads) as %% of the 1-thread %s peak, i.e. how fast "
            "the kernel runs while it holds a core; with other processes on the machine the wall time also "
            "counts the time they held the cores. *vs OpenBLAS, CPU time*: the same ratio as *vs OpenBLAS* "
            "over CPU time instead of wall time. Both are blank for memory-bound rows." % (isa, isa), ""]
    out += a_rows + [""]
    if a_notes:
        out += ["Notes:", ""] + ["- " + n for n in a_notes] + [""]
    out += ["## Baselines (same inputs; each output checked against attnc's before timing, "
            "or against the naive loop where attnc did not run)", ""]
    out += b_rows + [""]
    if b_notes:
        out += ["Notes:", ""] + ["- " + n for n in b_notes] + [""]
    out += pair_lines(results)
    out += python_overhead_table(results_dir)
    out += backward_table(results_dir, results)
    if with_roofline:
        out += ["![roofline](roofline.png)", ""]
    text = "\n".join(out)
    with open(os.path.join(results_dir, "table.md"), "w") as f:
        f.write(text)
    return text


def write_roofline(results_dir, results):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    m = results["machine"]
    isa, peak_used = peak_of(results, "used")
    _, peak_one = peak_of(results, "1")
    bw_used, bw_one = m["triad_gbs"].get("used", m["triad_gbs"]["all"]), m["triad_gbs"]["1"]
    fig, ax = plt.subplots(figsize=(9, 6))
    xs = [10 ** (e / 20) for e in range(-20, 81)]  # 0.1 .. 10^4 FLOP/byte
    ax.plot(xs, [min(peak_used, x * bw_used) for x in xs], "k-",
            label="roof, %d threads: %.0f GFLOP/s %s, %.1f GB/s triad" % (
                results["threads"], peak_used, isa, bw_used))
    if results["threads"] != 1:
        ax.plot(xs, [min(peak_one, x * bw_one) for x in xs], "k--",
                label="roof, 1 thread: %.0f GFLOP/s, %.1f GB/s" % (peak_one, bw_one))
    styles = {"attnc": ("o", "tab:red", "attnc"), "openblas": ("s", "tab:blue", "OpenBLAS"),
              "torch": ("^", "tab:green", "PyTorch"), "naive": ("x", "tab:gray", "naive loop")}
    for key, (marker, color, name) in styles.items():
        pts = []
        for c in results["configs"]:
            t = timed(c["impls"][key])
            if t and c["impls"][key]["status"] == "ok":  # a wrong result is not plotted
                pts.append((c["flops"] / c["bytes"], c["flops"] / t / 1e9, c["id"]))
        if not pts:
            continue
        ax.scatter([p[0] for p in pts], [p[1] for p in pts], marker=marker, color=color, label=name, zorder=3)
        if key == "attnc" or (key == "openblas" and not any(timed(c["impls"]["attnc"]) for c in results["configs"])):
            for x, y, cid in pts:
                ax.annotate(cid, (x, y), fontsize=6, xytext=(3, 3), textcoords="offset points")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP per byte of inputs + output)")
    ax.set_ylabel("GFLOP/s (visible pairs only)")
    ax.set_title("attnc roofline, %s" % results["timestamp"])
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(os.path.join(results_dir, "roofline.png"), dpi=120)


def append_history(results_dir, results, torch):
    """One line per full run in bench/results/history.md, so a regression shows."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "history.md")
    cells = []
    for c in results["configs"]:
        t = timed(c["impls"]["attnc"])
        if not t or c["impls"]["attnc"]["status"] != "ok":
            continue
        cell = roof_cell(c, t, results).split(" (")[0].replace(" = ", " ")
        blas = timed(c["impls"]["openblas"])
        if blas:
            cell += ", %.2fx OpenBLAS" % (blas / t)
        cells.append("%s: %s" % (c["id"], cell))
    for p in results.get("pairs") or []:
        cells.append("%s / %s alternated: %.3f of its time" % (
            p["a"], p["b"], p["a_median_s"] / p["b_median_s"]))
    commit = os.popen("git -C '%s' rev-parse --short HEAD 2>/dev/null" % os.path.dirname(
        os.path.abspath(__file__))).read().strip() or "?"
    new = not os.path.exists(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a") as f:
        if new:
            f.write("# Benchmark history: one line per full `bench/run.sh` run\n\n")
        # Which OpenBLAS kernels the ratios were measured against (a fallback
        # to an SSE3 core makes every "x OpenBLAS" 4-5x too high).
        core = results["machine"].get("openblas", "").partition("; core ")[2]
        f.write("- %s, %s, %s, %d threads%s: %s\n" % (
            results["timestamp"], commit, results["machine"]["cpu"], results["threads"],
            ", OpenBLAS core " + core if core else "", "; ".join(cells)))


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results_dir = sys.argv[1]
    results, torch = load(results_dir)
    # The picture first: the table links it only when it was made.
    try:
        write_roofline(results_dir, results)
        with_roofline = True
    except ImportError as e:
        print("report.py: no roofline (%s); install it with scripts/install-deps.sh --bench "
              "(python3-matplotlib)" % e, file=sys.stderr)
        with_roofline = False
    text = write_table(results_dir, results, torch, with_roofline)
    # (--quick and --only runs are not full runs: no line in the history)
    if not results["quick"] and not results.get("subset"):
        append_history(results_dir, results, torch)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
