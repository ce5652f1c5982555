"""An installed kscope, used as a user would use it (docs/install.md).

usage: install_test.py prefix --build BUILD --source SRC
       install_test.py deb    --build BUILD --source SRC --deb-build DIR

prefix: `cmake --install BUILD --prefix TMP/P`.  deb: scripts/make-deb.sh
builds the .deb (in DIR, a build of its own), lintian must report no
error on it, and `dpkg-deb -x` unpacks it into TMP/root, whose usr/ is the
prefix.  Then, with only the prefix's bin (and the system's /usr/bin:/bin)
on PATH and the working directory a fresh temporary one:

  - every command's --help, kscope avail
  - a program built against the user API through pkg-config and through
    CMake's find_package(kscope), run plain and under kscope sample: the
    same stdout, and its region in profile.db
  - programs built against tune.h and vizbin.h both ways
  - kscope op on the OpenCL example (PoCL), kscope memcheck on a
    use-after-free and with --heap-map on a far overflow, falseshare and
    contention on the threads examples, falseshare's compiled front end
    on a program built with the flags of --print-cflags,
    pack, tune, calibrate --quick, mpirun -n 2 kscope sample and kscope
    merge, report and inspect, kscope predict --chip ascend910b,
    kscope instrument started and a copy rewritten with --rewrite
  - kscope view on the sample run: its page and one API answer over HTTP
  - import kscope.predict in Debian's python3 through the installed
    kscope.pth, and a model scheduled with it
  - kscope started through a symbolic link in PATH
  - a copy of the prefix with a file removed: the message names what is
    missing, where kscope looked, and what to do
"""
import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import threading
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from kstest import Failure, TempDirs, check  # noqa: E402

DEBIAN_PYTHON = "/usr/bin/python3"
TIMEOUT = 300

USER_PROG = r"""
#include <kscope/user.h>
#include <stdio.h>

int main(void)
{
	volatile double x = 0;

	kscope_region_push("installed_region");
	for (long i = 0; i < 40000000; i++)
		x += (double)i * 0.5;
	kscope_region_pop();
	printf("sum %.0f\n", x);
	return 0;
}
"""

USER_CMAKE = """
cmake_minimum_required(VERSION 3.16)
project(installed_user C)
find_package(kscope 0.1 REQUIRED)
add_executable(app prog.c)
target_link_libraries(app PRIVATE kscope::user)
"""


# The C APIs of tune.h and vizbin.h, from an installed kscope: a search
# space parsed, a container written with a source block and read back.
APIS_PROG = r"""
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <kscope/tune.h>
#include <kscope/vizbin.h>

int main(int argc, char **argv)
{
	static const char space[] = "{\"TILE\": [16, 32, 64], \"UNROLL\": [1, 2]}";
	static const char text[] = "int main(void) { return 0; }\n";
	struct ks_tune_space *s;
	struct ks_vb_writer *w;
	struct ks_vb_reader *r;
	struct ks_vb_error verr;
	char err[512];
	int fd;

	if (argc != 2 || ks_tune_space_parse(space, strlen(space), "space", &s, err, sizeof err)) {
		fprintf(stderr, "tune: %s\n", err);
		return 1;
	}
	printf("configs %zu keys %zu first %s=%s\n", s->nconfigs, s->nkeys, s->keys[0],
	       s->values[0]);
	ks_tune_space_free(s);
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || ks_vb_writer_open(fd, &w, &verr) ||
	    ks_vb_write(w, KS_VB_SOURCE, KS_VB_VERSION, "/src/k.c", text, strlen(text), &verr)) {
		fprintf(stderr, "vizbin write: %s\n", verr.msg);
		return 1;
	}
	ks_vb_writer_free(w);
	close(fd);
	if (ks_vb_open(argv[1], KS_VB_CHECK_PAYLOADS, &r, &verr)) {
		fprintf(stderr, "vizbin read: %s\n", verr.msg);
		return 1;
	}
	printf("blocks %u type %s path %s\n", ks_vb_count(r),
	       ks_vb_type_name(ks_vb_block_at(r, 0)->type), ks_vb_block_at(r, 0)->path);
	ks_vb_close(r);
	return 0;
}
"""

APIS_CMAKE = """
cmake_minimum_required(VERSION 3.16)
project(installed_apis C)
find_package(kscope 0.1 REQUIRED)
add_executable(apis prog.c)
target_link_libraries(apis PRIVATE kscope::tune kscope::vizbin)
"""


class Env:
    """Runs commands as a user of the installed kscope would."""

    def __init__(self, prefix, work):
        self.prefix = prefix
        self.work = work
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("KSCOPE_", "PYTHON", "LD_", "PKG_CONFIG", "CMAKE_",
                                    "XDG_"))}
        env["PATH"] = f"{prefix}/bin:/usr/bin:/bin"
        env["HOME"] = work            # nothing kscope writes lands in the real home
        env["OMPI_ALLOW_RUN_AS_ROOT"] = env["OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"] = "1"
        self.env = env

    def run(self, argv, expect=0, env=None, cwd=None, what=None):
        e = dict(self.env)
        e.update(env or {})
        r = subprocess.run(argv, cwd=cwd or self.work, env=e, stdin=subprocess.DEVNULL,
                           capture_output=True, timeout=TIMEOUT)
        out, err = r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")
        if expect is not None:
            check(r.returncode == expect,
                  f"{what or ' '.join(argv)}: exit {r.returncode}, expected {expect}\n"
                  f"stdout: {out[-1500:]}\nstderr: {err[-1500:]}")
        return r.returncode, out, err, r.stdout


def only_run_dir(parent):
    dirs = [d for d in os.listdir(parent) if os.path.isdir(os.path.join(parent, d))]
    check(len(dirs) == 1, f"{parent}: {len(dirs)} run directories: {dirs}")
    return os.path.join(parent, dirs[0])


def python_site(prefix):
    """The site directory kscope.pth went to for this prefix."""
    found = []
    for root, _, files in os.walk(os.path.join(prefix, "lib")):
        if "kscope.pth" in files:
            found.append(root)
    check(len(found) == 1, f"{prefix}: kscope.pth in {found or 'no directory'}")
    return found[0]


def check_help(e):
    _, out, _, _ = e.run(["kscope", "help"])
    cmds = re.findall(r"^  ([a-z]+) ", out, re.M)
    check(len(cmds) >= 10, f"kscope help lists {cmds}")
    for c in cmds:
        if c != "help":
            e.run(["kscope", c, "--help"])
    e.run(["kscope", "avail"])
    print(f"ok   help: {len(cmds)} commands, each --help")


def check_user_api(e, build_examples):
    """Builds the user-API program both ways; returns the pkg-config one."""
    src = os.path.join(e.work, "userprog")
    os.makedirs(src)
    with open(os.path.join(src, "prog.c"), "w") as f:
        f.write(USER_PROG)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(USER_CMAKE)
    pc = {"PKG_CONFIG_PATH": f"{e.prefix}/lib/pkgconfig"}
    _, flags, _, _ = e.run(["pkg-config", "--cflags", "--libs", "kscope-user"], env=pc)
    _, libdir, _, _ = e.run(["pkg-config", "--variable=libdir", "kscope-user"], env=pc)
    check(os.path.realpath(libdir.strip()) == os.path.realpath(f"{e.prefix}/lib"),
          f"pkg-config's libdir {libdir.strip()} is not {e.prefix}/lib")
    app_pc = os.path.join(src, "app_pc")
    e.run(["cc", "-O1", "prog.c", "-o", app_pc, *flags.split(),
           f"-Wl,-rpath,{e.prefix}/lib"], cwd=src)
    cbuild = os.path.join(src, "cmake-build")
    e.run(["cmake", "-S", src, "-B", cbuild, f"-DCMAKE_PREFIX_PATH={e.prefix}"],
          what="cmake configure with find_package(kscope)")
    e.run(["cmake", "--build", cbuild], what="cmake --build")
    app_cmake = os.path.join(cbuild, "app")
    _, ldd, _, _ = e.run(["ldd", app_cmake])
    check(f"{os.path.realpath(e.prefix)}/lib/libkscope-user.so" in
          ldd.replace(e.prefix, os.path.realpath(e.prefix)),
          f"the find_package build does not use the installed library:\n{ldd}")
    plain = {}
    for app in (app_pc, app_cmake):
        _, out, _, raw = e.run([app])
        check(re.fullmatch(r"sum \d+\n", out), f"{app} printed {out!r}")
        plain[app] = raw
    # Under kscope sample: the same stdout, and the region recorded.
    for app in (app_pc, app_cmake):
        outdir = os.path.join(e.work, "s-" + os.path.basename(app))
        _, _, err, raw = e.run(["kscope", "sample", "-o", outdir, "--", app])
        check(raw == plain[app], f"{app} under kscope sample printed {raw!r}, "
                                 f"plain {plain[app]!r}")
        run = only_run_dir(outdir)
        db = sqlite3.connect(f"file:{run}/profile.db?mode=ro", uri=True)
        names = [r[0] for r in db.execute(
            "SELECT s.text FROM regions r JOIN strings s ON s.id = r.name")]
        nsamples = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
        db.close()
        check("installed_region" in names,
              f"{app}: profile.db regions {names}: the user API's region is missing")
        check(nsamples > 0, f"{app}: no samples")
        print(f"ok   user API via {'pkg-config' if app == app_pc else 'find_package'}: "
              f"region recorded, {nsamples} samples, stdout unchanged")
    return os.path.join(e.work, "s-app_pc")


def check_c_apis(e):
    """tune.h and vizbin.h through pkg-config and find_package; kscope
    inspect reads the container the library wrote."""
    src = os.path.join(e.work, "apis")
    os.makedirs(src)
    with open(os.path.join(src, "prog.c"), "w") as f:
        f.write(APIS_PROG)
    with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
        f.write(APIS_CMAKE)
    pc = {"PKG_CONFIG_PATH": f"{e.prefix}/lib/pkgconfig"}
    _, flags, _, _ = e.run(["pkg-config", "--cflags", "--libs", "kscope-tune",
                            "kscope-vizbin"], env=pc)
    app_pc = os.path.join(src, "apis_pc")
    e.run(["cc", "-std=c11", "-D_GNU_SOURCE", "prog.c", "-o", app_pc, *flags.split(),
           f"-Wl,-rpath,{e.prefix}/lib"], cwd=src)
    cbuild = os.path.join(src, "cmake-build")
    e.run(["cmake", "-S", src, "-B", cbuild, f"-DCMAKE_PREFIX_PATH={e.prefix}"],
          what="cmake configure with kscope::tune and kscope::vizbin")
    e.run(["cmake", "--build", cbuild], what="cmake --build")
    for app in (app_pc, os.path.join(cbuild, "apis")):
        vb = os.path.join(src, os.path.basename(app) + ".bin")
        _, out, _, _ = e.run([app, vb])
        check(out == "configs 6 keys 2 first TILE=16\n"
                     "blocks 1 type source path /src/k.c\n", f"{app} printed {out!r}")
        _, listing, _, _ = e.run(["kscope", "inspect", vb])
        check("/src/k.c" in listing, f"kscope inspect {vb}: {listing[:500]}")
    print("ok   tune.h and vizbin.h through pkg-config and find_package; inspect reads "
          "the container")


def check_op(e, build_examples):
    outdir = os.path.join(e.work, "o")
    _, out, err, _ = e.run(["kscope", "op", "-o", outdir, "--",
                            os.path.join(build_examples, "opencl", "vadd")])
    run = only_run_dir(outdir)
    with open(os.path.join(run, "summary.csv")) as f:
        summary = f.read()
    check("vadd" in summary, f"op summary.csv has no vadd: {summary[:500]}")
    check("1 kernel(s) collected" in out + err, f"op printed {out + err}")
    print("ok   op: vadd collected on the OpenCL device")


def check_memcheck(e, build_examples):
    outdir = os.path.join(e.work, "m")
    e.run(["kscope", "memcheck", "-o", outdir, "--",
           os.path.join(build_examples, "memory", "uaf")], expect=None)
    run = only_run_dir(outdir)
    with open(os.path.join(run, "report.json")) as f:
        report = json.load(f)
    kinds = [x.get("kind") for x in report.get("errors", [])]
    check("use-after-free" in kinds, f"memcheck found {kinds}")
    print(f"ok   memcheck: {kinds}")


def check_falseshare(e, build_examples):
    outdir = os.path.join(e.work, "f")
    e.run(["kscope", "falseshare", "-o", outdir, "--",
           os.path.join(build_examples, "threads", "falseshare")], expect=None)
    run = only_run_dir(outdir)
    with open(os.path.join(run, "report.json")) as f:
        report = json.load(f)
    fs = report.get("false_sharing") or {}
    names = [o.get("variable", {}).get("name") for o in fs.get("objects", [])
             if o.get("verdict") == "false"]
    check(fs.get("false_lines", 0) >= 1 and "counters" in names,
          f"falseshare found {fs.get('false_lines')} falsely shared lines, objects {names}")
    print(f"ok   falseshare: {fs['false_lines']} falsely shared line(s), object {names}")


def check_compiled_front_end(e):
    """The compiled front end as a user builds for it: the flags the
    installed kscope prints, a program built with them (gcc), run alone
    and under kscope falseshare, which picks the compiled front end and
    names the struct's fields from the program's DWARF."""
    _, out, _, _ = e.run(["kscope", "falseshare", "--print-cflags"])
    flags = dict(re.findall(r"^(KSCOPE_MT_\w+)='([^']*)'$", out, re.M))
    check({"KSCOPE_MT_CFLAGS", "KSCOPE_MT_LDFLAGS_GCC"} <= set(flags),
          f"--print-cflags printed {out}")
    check(os.path.join(e.prefix, "lib") in flags["KSCOPE_MT_LDFLAGS_GCC"],
          f"--print-cflags names no installed library directory: {flags}")
    src = os.path.join(SOURCE, "examples", "threads", "sharing_patterns.c")
    obj, prog = os.path.join(e.work, "sp.o"), os.path.join(e.work, "sp")
    e.run(["gcc", *flags["KSCOPE_MT_CFLAGS"].split(), "-O1", "-pthread", "-c", src, "-o", obj])
    e.run(["gcc", "-pthread", obj, *flags["KSCOPE_MT_LDFLAGS_GCC"].split(), "-o", prog])
    _, alone, _, _ = e.run([prog, "fields", "200000"])
    outdir = os.path.join(e.work, "cf")
    rc, out, err, _ = e.run(["kscope", "falseshare", "-o", outdir, "--", prog, "fields",
                             "200000"], expect=100)
    check(out == alone, f"under kscope the program printed {out!r}, alone {alone!r}")
    with open(os.path.join(only_run_dir(outdir), "report.json")) as f:
        report = json.load(f)
    check(report["settings"].get("front_end") == "compiled",
          f"front end {report['settings'].get('front_end')}")
    objs = report["false_sharing"]["objects"]
    parts = [p["name"] for o in objs for ln in o["lines"] for p in ln.get("parts", [])]
    check([o["variable"].get("name") for o in objs] == ["st"] and
          parts == ["st.a", "st.b", "st.c", "st.d"], f"objects {[o['name'] for o in objs]}, "
          f"parts {parts}")
    print(f"ok   compiled front end: built with --print-cflags, st falsely shared: {parts}")


def check_heap_map(e, build_examples):
    """memcheck --heap-map (its preload library installed): the block
    nearest to a write 400 bytes past a 1 MiB block."""
    outdir = os.path.join(e.work, "h")
    e.run(["kscope", "memcheck", "--heap-map", "-o", outdir, "--",
           os.path.join(build_examples, "memory", "far_overflow")], expect=None)
    with open(os.path.join(only_run_dir(outdir), "report.json")) as f:
        report = json.load(f)
    errs = [x for x in report.get("errors", []) if x.get("kind") == "invalid-write"]
    hm = errs[0].get("heap_map", {}) if errs else {}
    below = hm.get("below") or {}
    check(len(errs) == 1 and hm.get("status") == "found" and
          (below.get("size"), below.get("distance")) == (1048576, 400),
          f"memcheck --heap-map: {errs}")
    print("ok   memcheck --heap-map: the 1 MiB block, 400 bytes before the write")


def check_contention(e, build_examples):
    outdir = os.path.join(e.work, "c")
    e.run(["kscope", "contention", "-o", outdir, "--",
           os.path.join(build_examples, "threads", "contention")])
    run = only_run_dir(outdir)
    with open(os.path.join(run, "report.json")) as f:
        report = json.load(f)
    check(report.get("analysis") == "contention" and report.get("objects"),
          f"contention report: {str(report)[:500]}")
    print(f"ok   contention: {len(report['objects'])} contended object(s)")


def check_pack_tune_calibrate(e):
    src = os.path.join(e.work, "tune")
    os.makedirs(src)
    kernel = os.path.join(src, "k.c")
    with open(kernel, "w") as f:
        f.write("#include <stdio.h>\n#define N 2 // tunable\n"
                "int main(void) { printf(\"KSCOPE_TIME_NS=%d\\n\", 1000 * N); return 0; }\n")
    with open(os.path.join(src, "space.json"), "w") as f:
        f.write('{"N": [3, 1, 2]}')
    e.run(["kscope", "pack", "-o", os.path.join(e.work, "pk"), "--source", kernel])
    vb = os.path.join(only_run_dir(os.path.join(e.work, "pk")), "visualize_data.bin")
    _, out, _, _ = e.run(["kscope", "inspect", vb])
    check(kernel in out, f"inspect of the packed container: {out[:400]}")
    _, out, err, _ = e.run(["kscope", "tune", "-o", os.path.join(e.work, "tu"), "--src", kernel,
                            "--space", os.path.join(src, "space.json"),
                            "--build", "cc -O1 {src} -o {exe}", "--run", "{exe}",
                            "--warmup", "0", "--repeat", "1"])
    run = only_run_dir(os.path.join(e.work, "tu"))
    with open(os.path.join(run, "tune.json")) as f:
        best = json.load(f).get("best") or {}
    check((best.get("values") or {}).get("N") == 1 and best.get("median_ns") == 1000.0,
          f"tune's best is {best}, expected N=1 at 1000 ns\n{out}{err}")
    _, out, err, _ = e.run(["kscope", "calibrate", "--quick", "--no-opencl", "--no-chip"])
    check("DRAM" in out + err or "dram" in out + err, f"calibrate printed {out}{err}")
    print("ok   pack and inspect, tune (best N=1 of 3), calibrate --quick")


def check_mpi_merge(e, build_examples):
    if not shutil.which("mpirun"):
        raise Failure("mpirun is missing: scripts/install-deps.sh installs openmpi-bin")
    outdir = os.path.join(e.work, "mpi")
    e.run(["mpirun", "--oversubscribe", "-n", "2", "kscope", "sample", "-o", outdir, "--",
           os.path.join(build_examples, "sample", "mpi_ring")])
    run = only_run_dir(outdir)
    e.run(["kscope", "merge", run])
    db = sqlite3.connect(f"file:{run}/profile.db?mode=ro", uri=True)
    ranks = db.execute("SELECT count(DISTINCT rank) FROM processes").fetchone()[0]
    db.close()
    check(ranks == 2, f"the merged profile has {ranks} ranks")
    print("ok   mpirun -n 2 kscope sample, then kscope merge: 2 ranks")


def check_instrument(e):
    """kscope instrument, installed: fib(20) started (21,891 calls), and a
    copy rewritten with --rewrite, whose runtime is the installed one,
    run as it is; kscope report on the run."""
    fib = os.path.join(e.work, "ifib")
    subprocess.run(["gcc", "-O2", "-o", fib, os.path.join(SOURCE, "examples", "instrument",
                                                          "fib.c")], check=True)
    outdir = os.path.join(e.work, "instr")
    _, raw, _, _ = e.run(["kscope", "instrument", "-o", outdir, "--", fib, "20"])
    check(raw == "fib(20) x 1 = 6765\n", f"kscope instrument: the program printed {raw!r}")
    _, rep, _, _ = e.run(["kscope", "report", only_run_dir(outdir)])
    rows = {ln.split()[0]: ln.split()[1] for ln in rep.splitlines()[1:] if ln.split()}
    check(rows.get("fib") == "21891", f"kscope report on an instrument run: {rep[:500]}")
    rw = os.path.join(e.work, "ifib-rw")
    rwout = os.path.join(e.work, "instr-rw")
    e.run(["kscope", "instrument", "--rewrite", rw, "-o", rwout, "--", fib])
    dyn = subprocess.run(["readelf", "-d", rw], capture_output=True, text=True).stdout
    check(f"[{os.path.realpath(e.prefix)}/" in dyn or f"[{e.prefix}/" in dyn,
          f"the rewritten copy needs a runtime outside the prefix:\n{dyn[:800]}")
    _, raw, _, _ = e.run([rw, "20"])
    check(raw == "fib(20) x 1 = 6765\n", f"the rewritten copy printed {raw!r}")
    _, rep, _, _ = e.run(["kscope", "report", only_run_dir(rwout)])
    rows = {ln.split()[0]: ln.split()[1] for ln in rep.splitlines()[1:] if ln.split()}
    check(rows.get("fib") == "21891", f"kscope report on the rewritten copy's run: {rep[:500]}")
    print("ok   kscope instrument: fib(20) started and rewritten, 21891 calls each")


def check_causal(e):
    """kscope causal, installed: examples/causal/balance.c built against
    the installed user API (its kscope_progress), run from PATH; the
    barrier's line A ranks first, and kscope report prints the run's
    report.txt again."""
    prog = os.path.join(e.work, "cbalance")
    src = os.path.join(SOURCE, "examples", "causal", "balance.c")
    e.run(["cc", "-g", "-O1", "-pthread", f"-I{e.prefix}/include", src, "-o", prog,
           f"-L{e.prefix}/lib", "-lkscope-user", f"-Wl,-rpath,{e.prefix}/lib"])
    with open(src) as f:
        line_a = next(n for n, t in enumerate(f, 1) if "/* line A */" in t)
    outdir = os.path.join(e.work, "causal")
    _, out, err, _ = e.run(["kscope", "causal", "-o", outdir, "--speedups", "0,50",
                            "--experiment-ms", "50", "--", prog, "300"])
    check(out == "balance: 300 rounds\n", f"kscope causal: the program printed {out!r}")
    run = only_run_dir(outdir)
    with open(os.path.join(run, "report.txt")) as f:
        report = f.read()
    check(report.startswith(f"{SOURCE}/examples/causal/balance.c:{line_a} ") or
          report.startswith(f"{os.path.realpath(SOURCE)}/examples/causal/balance.c:{line_a} "),
          f"kscope causal: line A first in report.txt:\n{report[:600]}\n{err[-800:]}")
    _, rep, _, _ = e.run(["kscope", "report", run])
    check(rep == report, f"kscope report on a causal run: {rep[:300]!r}")
    print(f"ok   kscope causal: balance.c:{line_a} ranked first, kscope report agrees")


def check_report_inspect(e, sample_parent):
    _, out, _, _ = e.run(["kscope", "report", only_run_dir(sample_parent)])
    check("main" in out, f"kscope report printed {out[:500]}")
    bins = []
    for root, _, files in os.walk(os.path.join(e.work, "o")):
        bins += [os.path.join(root, f) for f in files if f == "visualize_data.bin"]
    check(bins, "op wrote no visualize_data.bin")
    _, out, _, _ = e.run(["kscope", "inspect", bins[0]])
    check(re.search(r"\b0x0[0-9a-f]\b", out), f"kscope inspect printed {out[:500]}")
    print("ok   report on the sample run, inspect on op's container")


def check_predict(e, source):
    outdir = os.path.join(e.work, "p")
    _, out, err, _ = e.run(["kscope", "predict", "--chip", "ascend910b", "-o", outdir,
                            os.path.join(source, "examples", "predict", "vadd.kpp")])
    m = re.search(r"predicted time: ([0-9.]+) us \((\d+) cycles", out + err)
    check(m and int(m.group(2)) > 0, f"predict printed {out + err}")
    print(f"ok   predict: {m.group(2)} cycles on ascend910b")
    return int(m.group(2))


def check_view(e, sample_parent):
    run = only_run_dir(sample_parent)
    p = subprocess.Popen(["kscope", "view", run, "--port", "0"], cwd=e.work, env=e.env,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        line = []
        t = threading.Thread(target=lambda: line.append(p.stdout.readline()), daemon=True)
        t.start()
        t.join(60)
        check(line and line[0], f"kscope view printed no URL; stderr: "
                                f"{p.stderr.read() if p.poll() is not None else ''}")
        m = re.match(r"kscope: view: (http://[^ ]+/)\?token=([0-9a-f]{48}) ", line[0])
        check(m, f"kscope view's first line: {line[0]!r}")
        url, auth = m.group(1), {"Authorization": f"Bearer {m.group(2)}"}
        with urllib.request.urlopen(urllib.request.Request(url, headers=auth),
                                    timeout=30) as r:
            page = r.read()
        with open(os.path.join(e.prefix, "share", "kscope", "view", "index.html"), "rb") as f:
            check(page == f.read(), "the page served is not the installed index.html")
        body = json.dumps({"id": 1, "moduleName": "timeline", "type": "request",
                           "command": "import/action", "params": {"path": [run]}}).encode()
        req = urllib.request.Request(url + "api", data=body,
                                     headers={"Content-Type": "application/json", **auth})
        with urllib.request.urlopen(req, timeout=30) as r:
            ans = json.load(r)
        check(ans.get("result") is True, f"import/action: {str(ans)[:500]}")
        cards = ans["body"]["result"]
        check(len(cards) == 1 and "profile" in cards[0]["kinds"],
              f"import/action cards: {cards}")
        print(f"ok   view: page served, card {cards[0]['cardId']} {cards[0]['kinds']}")
    finally:
        p.send_signal(2)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def check_python(e):
    site = python_site(e.prefix)
    code = (
        "import site, sys\n"
        f"site.addsitedir({site!r})\n"
        "from kscope.predict import Chip, Tensor, vadd, library_path\n"
        "with Chip('ascend910b') as chip:\n"
        "    x = Tensor('GM', 'FP16', [4096], format='ND')\n"
        "    y = Tensor('GM', 'FP16', [4096], format='ND')\n"
        "    z = Tensor('GM', 'FP16', [4096], format='ND')\n"
        "    xu, yu, zu = Tensor('UB'), Tensor('UB'), Tensor('UB')\n"
        "    xu.load(x)\n"
        "    yu.load(y)\n"
        "    out = vadd(xu, yu, zu)()\n"
        "    z.load(out[0])\n"
        "print(library_path())\n"
        "print(chip.cycles)\n")
    _, out, _, _ = e.run([DEBIAN_PYTHON, "-c", code])
    lib, cycles = out.split("\n")[:2]
    check(os.path.realpath(lib) == os.path.realpath(f"{e.prefix}/lib/libkscope-predict.so"),
          f"kscope.predict loaded {lib}, not the installed library")
    check(float(cycles) > 0, f"the Python model took {cycles} cycles")
    print(f"ok   python: import kscope.predict through {site}/kscope.pth, "
          f"{float(cycles):.0f} cycles")


def check_man_completion(e):
    """man finds the installed pages through the prefix's share/man, and
    the installed completion completes commands and an option's values."""
    _, path, _, _ = e.run(["man", "-w", "kscope-sample"],
                          env={"MANPATH": f"{e.prefix}/share/man"})
    check(os.path.realpath(path.strip()) ==
          os.path.realpath(f"{e.prefix}/share/man/man1/kscope-sample.1.gz"),
          f"man -w kscope-sample: {path!r}")
    _, page, _, _ = e.run(["man", "-P", "cat", "kscope-sample"],
                          env={"MANPATH": f"{e.prefix}/share/man", "MANWIDTH": "100"})
    _, helptext, _, _ = e.run(["kscope", "sample", "--help"])
    opts = set(re.findall(r"--[a-z][a-z-]+", helptext))
    missing = [o for o in sorted(opts) if o not in page]
    check(len(opts) > 5 and not missing, f"man kscope-sample lacks {missing}")
    comp = f"{e.prefix}/share/bash-completion/completions/kscope"
    script = (f"source '{comp}'\n"
              "COMP_WORDS=(kscope sa); COMP_CWORD=1; COMP_LINE='kscope sa'; COMP_POINT=9\n"
              "_kscope; echo \"${COMPREPLY[*]}\"\n"
              "COMP_WORDS=(kscope report --format ''); COMP_CWORD=3\n"
              "_kscope; echo \"${COMPREPLY[*]}\"\n")
    _, out, _, _ = e.run(["bash", "--norc", "--noprofile", "-c", script])
    lines = out.split("\n")
    check(lines[0].split() == ["sample"], f"completing 'kscope sa' gave {lines[0]!r}")
    _, rhelp, _, _ = e.run(["kscope", "report", "--help"])
    check("text" in lines[1].split() and all(c in rhelp for c in lines[1].split()),
          f"completing 'kscope report --format' gave {lines[1]!r}")
    print(f"ok   man kscope-sample ({len(opts)} options), completion: {lines[1]}")


def check_symlink(e, tmp):
    links = tmp()
    os.symlink(os.path.join(e.prefix, "bin", "kscope"), os.path.join(links, "kscope"))
    outdir = os.path.join(e.work, "p-link")
    e.run(["kscope", "predict", "--chip", "ascend910b", "-o", outdir,
           os.path.join(SOURCE, "examples", "predict", "vadd.kpp")],
          env={"PATH": f"{links}:/usr/bin:/bin"}, what="kscope through a symbolic link")
    print("ok   started through a symbolic link in PATH: the chip is found")


def check_missing(e, tmp, sample_parent):
    broken = os.path.join(tmp(), "prefix")
    shutil.copytree(e.prefix, broken, symlinks=True)
    b = Env(broken, e.work)
    os.unlink(os.path.join(broken, "lib", "kscope", "libkscope.so"))
    rc, _, err, _ = b.run(["kscope", "sample", "-o", os.path.join(e.work, "x"), "--",
                           "/bin/true"], expect=None)
    check(rc == 1 and "libkscope.so is missing" in err and "looked for" in err
          and "reinstall kscope" in err,
          f"sample without libkscope.so: exit {rc}, {err}")
    os.unlink(os.path.join(broken, "share", "kscope", "view", "index.html"))
    rc, _, err, _ = b.run(["kscope", "view", only_run_dir(sample_parent), "--port", "0"],
                          expect=None)
    check(rc == 1 and "not installed" in err and f"{broken}/share/kscope/view" in err
          and "reinstall kscope" in err, f"view without its page: exit {rc}, {err}")
    shutil.rmtree(os.path.join(broken, "share", "kscope", "chips"))
    rc, _, err, _ = b.run(["kscope", "predict", "--chip", "ascend910b",
                           os.path.join(SOURCE, "examples", "predict", "vadd.kpp")],
                          expect=None)
    check(rc == 2 and "ascend910b" in err, f"predict without chips: exit {rc}, {err}")
    print("ok   a file removed: each message names it and where kscope looked")


def smoke(prefix, build, tmp, sanitized):
    e = Env(prefix, tmp())
    examples = os.path.join(build, "examples")
    check_help(e)
    sample_parent = check_user_api(e, examples)
    if sanitized:
        # Their objects carry AddressSanitizer's and the fuzzer's hooks,
        # which a program must bring itself: not a library to install.
        # The release build's install/prefix and install/deb check them.
        print("skip tune.h, vizbin.h and kscope.predict: the sanitizer build's "
              "libraries need the sanitizers' runtimes")
    else:
        check_c_apis(e)
    check_op(e, examples)
    check_memcheck(e, examples)
    check_falseshare(e, examples)
    check_compiled_front_end(e)
    check_heap_map(e, examples)
    check_contention(e, examples)
    check_pack_tune_calibrate(e)
    check_mpi_merge(e, examples)
    check_report_inspect(e, sample_parent)
    check_instrument(e)
    check_causal(e)
    check_predict(e, SOURCE)
    check_view(e, sample_parent)
    if not sanitized:
        check_python(e)
    check_man_completion(e)
    check_symlink(e, tmp)
    check_missing(e, tmp, sample_parent)


def build_deb(args, tmp):
    out = tmp()
    env = dict(os.environ)
    # The maintainer, as a packager sets it for Debian's tools.
    env["DEBFULLNAME"] = "kscope tests"
    env["DEBEMAIL"] = "kscope-tests@example.org"
    r = subprocess.run([os.path.join(SOURCE, "scripts", "make-deb.sh"), args.deb_build, out],
                       env=env, capture_output=True, text=True, timeout=1500)
    check(r.returncode == 0, f"make-deb.sh: exit {r.returncode}\n{r.stdout[-3000:]}\n"
                             f"{r.stderr[-3000:]}")
    deb = r.stdout.strip().split("\n")[-1]
    check(re.search(r"/kscope_[0-9.]+_[a-z0-9]+\.deb$", deb), f"make-deb.sh printed {deb!r}")
    info = subprocess.run(["dpkg-deb", "-f", deb, "Package", "Version", "Depends"],
                          capture_output=True, text=True, check=True).stdout
    for lib in ("libjansson4", "libdw1", "libsqlite3-0", "libcivetweb1", "libunwind8",
                "valgrind", "libcapstone4"):
        check(re.search(rf"\b{re.escape(lib)}\b", info), f"Depends lacks {lib}:\n{info}")
    check(shutil.which("lintian"), "lintian is missing: scripts/install-deps.sh installs it")
    r = subprocess.run(["lintian", "--fail-on", "error", deb], capture_output=True, text=True,
                       timeout=600)
    errors = [x for x in r.stdout.splitlines() if x.startswith("E: ")]
    check(r.returncode == 0 and not errors,
          f"lintian: exit {r.returncode}, errors:\n" + "\n".join(errors) + r.stderr[-2000:])
    warnings = [x for x in r.stdout.splitlines() if x.startswith("W: ")]
    print(f"ok   deb: {os.path.basename(deb)}, lintian: no errors, {len(warnings)} warnings")
    root = tmp()
    subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
    return os.path.join(root, "usr")


def main():
    global SOURCE
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["prefix", "deb"])
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--deb-build")
    ap.add_argument("--sanitized", action="store_true",
                    help="BUILD is the sanitizer build (KSCOPE_SANITIZE)")
    args = ap.parse_args()
    SOURCE = os.path.abspath(args.source)
    tmp = TempDirs("ks-install-")
    try:
        if args.mode == "prefix":
            prefix = os.path.join(tmp(), "P")
            r = subprocess.run(["cmake", "--install", args.build, "--prefix", prefix],
                               capture_output=True, text=True, timeout=TIMEOUT)
            check(r.returncode == 0, f"cmake --install: {r.stdout[-2000:]}{r.stderr[-2000:]}")
        else:
            check(args.deb_build, "deb needs --deb-build DIR")
            prefix = build_deb(args, tmp)
        smoke(prefix, os.path.abspath(args.build), tmp, args.sanitized)
    except (Failure, subprocess.SubprocessError, OSError) as e:
        print(f"FAIL install/{args.mode}: {e}")
        return 1
    finally:
        tmp.remove()
    print(f"install/{args.mode}: all checks passed")
    return 0


SOURCE = None

if __name__ == "__main__":
    sys.exit(main())
