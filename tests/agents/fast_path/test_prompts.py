"""The fast path's prompts and the reading of the writer's reply."""

from design_space import DesignPoint
from agents.fast_path import prompts

POINT = DesignPoint.parse_key("lsa/sequential/global_barrier/cta/4096K/32")


def test_the_cuda_block_and_the_declared_point_are_read():
    reply = prompts.parse_reply("Here:\n```cuda\nextern \"C\" int cuco_run() {}\n```\nDESIGN-POINT: `gin/sequential/"
                                "global_barrier/cta/4096K/32`\n")
    assert reply.code == 'extern "C" int cuco_run() {}\n' and reply.problem == ""
    point, problem = prompts.declared_point(reply.point_key, POINT)
    assert point.key() == "gin/sequential/global_barrier/cta/4096K/32" and problem == ""


def test_empty_garbled_and_unclosed_replies_hold_no_code():
    for text in ("", "I cannot help with that.", "```cuda\n__global__ void k() {", "```\n\n```"):
        assert prompts.parse_reply(text).problem == prompts.NO_CODE


def test_without_a_declaration_the_asked_point_stands_and_a_bad_one_is_a_problem():
    assert prompts.declared_point(None, POINT) == (POINT, "")
    point, problem = prompts.declared_point("lsa/diagonal", POINT)
    assert point is None and problem.startswith("the DESIGN-POINT line does not parse")


def test_the_write_prompt_holds_the_analysis_contract_comm_api_example_and_feedback():
    system, user = prompts.write_prompt(analysis="- ANALYSIS-LINE", point=POINT, example="// EXAMPLE-SOURCE",
                                        feedback="\n## FEEDBACK-SECTION\n")
    assert "DESIGN-POINT:" in system
    assert user.startswith("<!-- cuco-prompt fast_write v1 -->")
    for part in ("- ANALYSIS-LINE", "extern \"C\" int cuco_run(const cuco_ctx* ctx, cudaStream_t stream);",
                 "cuco_put_cta(...)", "cuco_barrier(c, index)", "// EXAMPLE-SOURCE", "## FEEDBACK-SECTION",
                 "#define CHUNK_BYTES 4194304"):
        assert part in user
    assert "cuco_gin_put" not in user  # only the chosen backend's section


def test_the_judge_prompt_bounds_logs_and_code():
    system, user = prompts.judge_prompt(iteration=2, point_key=POINT.key(), status="build_failed", stage="build",
                                        reason="error: expected ;", logs="x" * 50_000, code="y" * 50_000)
    assert "DIAGNOSIS" in user and "error: expected ;" in user
    assert len(user) < prompts.LOG_LIMIT + prompts.CODE_LIMIT + 2_000
