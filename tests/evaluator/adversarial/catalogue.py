"""Every hostile candidate of the suite with the verdict the cascade must give: the status, the stage
that refuses it, words its reason must contain, and which defence that is. test_adversarial.py runs
each through ``Evaluator.evaluate``; README.md's table lists the same entries (a test keeps them equal).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Callable, Optional, Union

from design_space.evaluation import Stage, Status
from tests.evaluator.adversarial import escape_kernels as X, hostile_kernels as K

Built = Union[str, tuple[str, str]]  # a source, or (child, parent) for the frozen-code rule

GUARD, OBJECT, EMULATOR, HARNESS_IO, SANDBOX, BUILD = (
    "guard", "object check (CPU build)", "emulator (crash handler / exit code)",
    "evaluator's own I/O memory (memfd)", "sandbox", "nvcc build")


@dataclass(frozen=True)
class Case:
    name: str
    workload: str
    attack: str  # the class of attack
    build: Callable[[], Built]
    status: Status
    stage: Optional[Stage]
    reason: tuple[str, ...]  # every one must be in the reason
    caught_by: str
    slow: bool = False  # deselected with -m 'not slow'
    hangs: bool = False  # needs the short-timeout evaluator
    hole: str = ""  # a known hole: the verdict it should get, as a strict xfail saying why it does not


def case(name, workload, attack, build, status, stage, reason, caught_by, **kw) -> Case:
    return Case(name, workload, attack, build, status, stage, (reason,) if isinstance(reason, str) else reason,
                caught_by, **kw)


R, W, C, T, B = Status.REJECTED, Status.WRONG_RESULT, Status.CRASHED, Status.TIMEOUT, Status.BUILD_FAILED
G, E = Stage.GUARD, Stage.EMULATE
AG, GA, RA = "allgather_gemm", "gemm_allreduce", "ring_attention"
VERIFIER, TOOLCHAIN, DENYLIST, SPECIAL, PEER, STOP, FROZEN, ESCAPE, PROTOCOL = (
    "code inside the verifier", "the toolchain", "denylist gaps", "special-casing the emulation",
    "another rank's memory", "stopping the run", "the frozen-code rule", "escaping the sandbox",
    "the contract (protocol, bounds, timing)")
NEVER_WRITTEN = "never written"

CATALOGUE: tuple[Case, ...] = (
    # code inside the verifier
    case("own_main", AG, VERIFIER, K.own_main, R, E, ("[defined_symbol]", "defines main"), OBJECT),
    case("extern_c_main", RA, VERIFIER, K.extern_c_main, R, E, ("[defined_symbol]", "defines main"), OBJECT, slow=True),
    case("constructor", GA, VERIFIER, K.constructor, R, E, ("[section]", ".init_array", "constructors"), OBJECT),
    case("static_destructor", RA, VERIFIER, K.static_destructor, R, E, ("__cxa_atexit", "allowlist"), OBJECT,
         slow=True),
    case("overrides_stream_synchronize", AG, VERIFIER, K.overrides_stream_synchronize, R, E,
         ("defines cudaStreamSynchronize", "emulator runtime defines"), OBJECT),
    case("overrides_cuda_call_weakly", GA, VERIFIER, K.overrides_cuda_call_weakly, R, E,
         ("defines cudaStreamQuery", "emulator runtime defines"), OBJECT, slow=True),
    case("overrides_harness_wait_weakly", GA, VERIFIER, K.overrides_harness_wait_weakly, R, G,
         ("[internal_name]", "cuco_emu_block_wait"), GUARD),
    case("overrides_harness_wait_pasted", RA, VERIFIER, K.overrides_harness_wait_pasted, R, G,
         ("cuco_emu_block_wait", "after macro expansion"), GUARD),
    case("overrides_libc_weakly", RA, VERIFIER, K.overrides_libc_weakly, R, E, ("defines memcmp", "weak override"),
         OBJECT, slow=True),
    case("overrides_operator_new", GA, VERIFIER, K.overrides_operator_new, R, E,
         ("defines operator new", "C/C++ runtime provides"), OBJECT, slow=True),
    case("prints_emu_ok_and_does_nothing", AG, VERIFIER, K.prints_emu_ok_and_does_nothing, W, E, NEVER_WRITTEN,
         HARNESS_IO),
    case("prints_emu_ok_from_the_device", GA, VERIFIER, K.prints_emu_ok_from_the_device, W, E, NEVER_WRITTEN,
         HARNESS_IO, slow=True),
    case("redirects_outputs_in_the_context", AG, VERIFIER, K.redirects_outputs_in_the_context, W, E, NEVER_WRITTEN,
         HARNESS_IO, slow=True),
    case("symlinks_the_manifest", GA, VERIFIER, K.symlinks_the_manifest, R, G, "symlink: file access", GUARD),
    case("answers_through_proc_self_fd", AG, VERIFIER, K.answers_through_proc_self_fd, R, G, "fopen: file access",
         GUARD),
    case("opens_proc_self_fd", RA, VERIFIER, K.opens_proc_self_fd, R, G, "open: file access", GUARD),
    # the toolchain
    case("incbin_file_scope", AG, TOOLCHAIN, K.incbin_file_scope, R, G, ("[asm_not_ptx]", "file-scope asm"), GUARD),
    case("incbin_in_device_code", GA, TOOLCHAIN, K.incbin_in_device_code, R, G, ".incbin", GUARD),
    case("incbin_in_host_code", RA, TOOLCHAIN, K.incbin_in_host_code, R, G, "GNU assembler directive", GUARD),
    case("include_directive", RA, TOOLCHAIN, K.include_directive, R, G, ".include", GUARD),
    case("fill_a_gigabyte", AG, TOOLCHAIN, K.fill_a_gigabyte, R, G, ".fill", GUARD),
    case("includes_an_absolute_path", GA, TOOLCHAIN, K.includes_an_absolute_path, R, G,
         ("[include_not_allowed]", "/etc/passwd"), GUARD),
    case("includes_a_host_file", RA, TOOLCHAIN, K.includes_a_host_file, R, G, "[include_not_allowed]", GUARD),
    case("include_hidden_by_a_macro", AG, TOOLCHAIN, K.include_hidden_by_a_macro, R, G, "#include SECRET", GUARD),
    case("has_include_probe", AG, TOOLCHAIN, K.has_include_probe, R, G, ("[build_dependent_code]", "__has_include"),
         GUARD),
    case("line_directive", GA, TOOLCHAIN, K.line_directive, R, E, ("[line_directive]", "#line"), OBJECT),
    case("linemarker", RA, TOOLCHAIN, K.linemarker, R, E, ("[line_directive]", "linemarker"), OBJECT, slow=True),
    case("section_attribute", AG, TOOLCHAIN, K.section_attribute, R, E, ("[symbol_attribute]", "section"), OBJECT),
    case("gnu_section_attribute", RA, TOOLCHAIN, K.gnu_section_attribute, R, E, "[symbol_attribute]", OBJECT,
         slow=True),
    case("alias_attribute", GA, TOOLCHAIN, K.alias_attribute, R, G, 'alias("fork") attribute', GUARD),
    # gaps in a denylist
    *(case(f"denylisted_{name}", wl.name, DENYLIST, partial(K.denylisted, name), R, G, f"{name}: ", GUARD)
      for name, (wl, _, _) in K.DENYLIST.items()),
    case("raw_syscall_bytes", AG, DENYLIST, K.raw_syscall_bytes, R, G, ".byte", GUARD),
    case("asm_label_for_a_banned_call", GA, DENYLIST, K.asm_label_for_a_banned_call, R, G,
         'asm label "open" renames a banned call', GUARD),
    case("asm_label_for_an_unlisted_call", RA, DENYLIST, K.asm_label_for_an_unlisted_call, R, E,
         ("[inline_asm]", "asm label"), OBJECT),
    case("pointer_to_a_banned_call", AG, DENYLIST, K.pointer_to_a_banned_call, R, G, "remove: file access", GUARD),
    case("call_pasted_by_a_macro", GA, DENYLIST, K.call_pasted_by_a_macro, R, G,
         ("fork: process control", "after macro expansion"), GUARD),
    case("unlisted_libc_call", GA, DENYLIST, K.unlisted_libc_call, R, E, ("[undefined_symbol]", "setrlimit"), OBJECT,
         slow=True),
    case("unlisted_libc_call_sysinfo", AG, DENYLIST, K.unlisted_libc_call_sysinfo, R, E,
         ("[undefined_symbol]", "sysinfo"), OBJECT, slow=True),
    # special-casing the emulation
    case("skips_unless_cpu_build", AG, SPECIAL, K.skips_unless_cpu_build, R, G, ("[internal_name]", "CUCO_COMM_CPU"),
         GUARD),
    case("cuda_arch_branch", GA, SPECIAL, K.cuda_arch_branch, R, G, ("[build_dependent_code]", "GPU device pass"),
         GUARD),
    case("cudacc_branch", RA, SPECIAL, K.cudacc_branch, R, G, ("[build_dependent_code]", "GPU host pass"), GUARD),
    case("cudart_version_branch", AG, SPECIAL, K.cudart_version_branch, R, G, "tests CUDART_VERSION", GUARD),
    *(case(f"works_only_at_the_spec_shapes_{wl}", wl, SPECIAL, partial(K.works_only_at_the_spec_shapes, wl), W, E,
           (".d", NEVER_WRITTEN), "drawn shapes (evaluator/shape_draws.py)", slow=wl != GA) for wl in (AG, GA, RA)),
    case("works_only_at_the_pool_shapes", AG, SPECIAL, K.works_only_at_the_pool_shapes, W, E, NEVER_WRITTEN,
         "drawn shapes (evaluator/shape_draws.py)"),
    case("waits_only_for_higher_ranks", AG, SPECIAL, K.waits_only_for_higher_ranks, W, E, "mismatching",
         "emulator schedule"),
    case("works_only_on_the_emulators_device", AG, SPECIAL, K.works_only_on_the_emulators_device, W, E,
         NEVER_WRITTEN, "emulator device properties"),
    case("replays_the_first_call", AG, SPECIAL, K.replays_the_first_call, W, E, ("call 2", "mismatching"), HARNESS_IO),
    case("replays_through_the_old_pointer", GA, SPECIAL, K.replays_through_the_old_pointer, C, E,
         ("output 0 of call 1 is not accessible during another call",), EMULATOR, slow=True),
    # another rank's memory
    case("peer_input_through_the_symmetric_buffer", AG, PEER, K.peer_input_through_the_symmetric_buffer, C, E,
         ("touched rank", "'s input 0 of call 1", "only through the comm API"), EMULATOR),
    case("peer_input_by_pointer_arithmetic", AG, PEER, K.peer_input_by_pointer_arithmetic, C, E,
         ("touched rank", "'s input 0 of call 1", "only through the comm API"), EMULATOR, slow=True),
    case("peer_workspace_by_pointer_arithmetic", RA, PEER, K.peer_workspace_by_pointer_arithmetic, C, E,
         ("rank 1 touched rank 0's workspace",), EMULATOR, slow=True),
    # stopping the run
    case("exits_with_the_harness_code", AG, STOP, X.exits_with_the_harness_code, R, G, "_Exit: ending the process",
         GUARD),
    case("exits_with_a_code", GA, STOP, X.exits_with_a_code, R, G, "exit: ending the process", GUARD),
    case("fills_the_disk", AG, STOP, X.fills_the_disk, R, G, "fopen: file access", GUARD),
    case("floods_stdout", AG, STOP, partial(X.floods_stdout, 64), W, E, NEVER_WRITTEN, SANDBOX),
    case("memory_bomb", GA, STOP, X.memory_bomb, C, E, "crashed", SANDBOX, slow=True),
    case("markup_in_the_crash_reason", AG, STOP, X.markup_in_the_crash_reason, C, E,
         ("crash: [/][bold red]pwned", *X.MARKUP_IN_REASON), EMULATOR),
    case("markup_in_the_deadlock_reason", GA, STOP, X.markup_in_the_deadlock_reason, T, E,
         ("deadlock", *X.MARKUP_IN_REASON), EMULATOR, slow=True),
    case("markup_in_the_build_log", RA, STOP, X.markup_in_the_build_log, R, G,
         ("[preprocess]", "#error [/][bold red]pwned", "[link=file:/etc/passwd]click[/link]"), GUARD),
    case("fork_bomb", AG, STOP, X.fork_bomb, R, G, "fork: process control", GUARD),
    case("endless_loop", AG, STOP, K.endless_loop, T, E, "time limit", SANDBOX, hangs=True, slow=True),
    case("huge_allocation_one", AG, STOP, partial(K.huge_allocation, "one"), C, E,
         "allows 268435456 bytes of allocations per rank", EMULATOR),
    case("huge_allocation_many", AG, STOP, partial(K.huge_allocation, "many"), C, E,
         "allows 268435456 bytes of allocations per rank", EMULATOR, slow=True),
    # escaping the sandbox (test_runtime_holds.py runs them past the guard)
    case("network", AG, ESCAPE, partial(X.network, 9), R, G, "socket: network access", GUARD),
    case("api_key", AG, ESCAPE, partial(X.api_key, "OPENAI_API_KEY"), R, G, "getenv: environment access", GUARD),
    case("write_outside", AG, ESCAPE, partial(X.write_outside, "/tmp/cuco-escaped.txt"), R, G, "fopen: file access",
         GUARD),
    # the contract: the signalling protocol, buffer bounds, streams, timing
    case("stale_output", AG, PROTOCOL, K.stale_output, W, E, ("call 2", NEVER_WRITTEN), HARNESS_IO),
    case("skipped_peer", AG, PROTOCOL, K.skipped_peer, W, E, ("rank 0 has", "mismatching"), HARNESS_IO, slow=True),
    case("one_rank_computes", AG, PROTOCOL, K.one_rank_computes, W, E, ("rank 1 has", NEVER_WRITTEN), HARNESS_IO,
         slow=True),
    case("unjoined_stream", AG, PROTOCOL, K.unjoined_stream, R, E, "join every side stream", EMULATOR),
    case("sync_on_the_enter_slots", AG, PROTOCOL, K.sync_on_the_enter_slots, R, E,
         "reserved for the call-entry signals", EMULATOR),
    case("sync_past_the_user_slots", AG, PROTOCOL, K.sync_past_the_user_slots, R, E,
         ("signal-pad slot 4528", "past the candidate's slots"), EMULATOR),
    case("announces_the_call_twice", AG, PROTOCOL, K.announces_the_call_twice, R, E, "more than once", EMULATOR),
    *(case(f"timing_{kind}", AG, PROTOCOL, partial(K.timing, kind), R, G, "timing", GUARD) for kind in K.TIMING),
    case("segfault", AG, PROTOCOL, K.segfault, C, E, ("SIGSEGV", "rank 1"), EMULATOR, slow=True),
    case("out_of_bounds_end", AG, PROTOCOL, partial(K.out_of_bounds, "end"), C, E,
         "0 bytes past the end of rank 1's output 0 of call 1", EMULATOR, slow=True),
    case("out_of_bounds_symm", AG, PROTOCOL, partial(K.out_of_bounds, "symm"), C, E,
         "past the end of rank 1's symmetric buffer", EMULATOR, slow=True),
    case("out_of_bounds_far", AG, PROTOCOL, partial(K.out_of_bounds, "far"), C, E,
         "past the end of rank 0's output 0 of call 1, beyond its guard page", HARNESS_IO),
    case("out_of_bounds_before", AG, PROTOCOL, partial(K.out_of_bounds, "before"), C, E,
         "16 bytes before the start of rank 1's output 0 of call 1", HARNESS_IO, slow=True),
    # the frozen-code rule (with the parent's source, as the loop passes it)
    case("frozen_change", AG, FROZEN, K.frozen_change, R, G, "[frozen_region_changed]", GUARD),
    case("evolve_block_grown", GA, FROZEN, K.evolve_block_grown, R, G, "[frozen_region_changed]", GUARD),
    case("evolve_markers_removed", RA, FROZEN, K.evolve_markers_removed, R, G, "[evolve_markers]", GUARD),
)

BY_NAME = {c.name: c for c in CATALOGUE}
assert len(BY_NAME) == len(CATALOGUE), "catalogue names must be unique"
