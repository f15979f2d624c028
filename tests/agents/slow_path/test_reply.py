"""Reading replies: code (SEARCH/REPLACE or a fenced file) and the declared design point."""

from agents.slow_path.reply import parse_reply

DIFF = """I will use bigger chunks.
<<<<<<< SEARCH
#define CHUNK_BYTES 65536
=======
#define CHUNK_BYTES 262144
>>>>>>> REPLACE

<<<<<<< SEARCH
#define THREADS 256
=======
#define THREADS 128
>>>>>>> REPLACE
DESIGN-POINT: lsa/sequential/global_barrier/cta/256K/4
"""


def test_a_diff_reply_gives_its_blocks_in_order_and_the_point():
    r = parse_reply(DIFF)
    assert r.ok and r.form == "diff"
    assert r.blocks == (("#define CHUNK_BYTES 65536", "#define CHUNK_BYTES 262144"),
                        ("#define THREADS 256", "#define THREADS 128"))
    assert r.point.key() == "lsa/sequential/global_barrier/cta/256K/4" and r.point_error is None


def test_a_full_reply_takes_the_largest_code_fence():
    text = ("```bash\nls\n```\n```cuda\nint a;\nint b;\n```\n```cpp\nint c;\n```\n"
            "**DESIGN-POINT:** `gin/sequential/global_barrier/cta/4K/1`")
    r = parse_reply(text)
    assert r.form == "full" and r.code == "int a;\nint b;\n"
    assert r.point.key() == "gin/sequential/global_barrier/cta/4K/1"


def test_the_templates_own_header_comment_is_not_a_declaration():
    r = parse_reply("```cuda\n// design point: lsa/sequential/global_barrier/cta/64K/4\nint x;\n```\n")
    assert r.ok and r.point is None and "has no 'DESIGN-POINT" in r.point_error


def test_an_invalid_point_keeps_the_code_and_says_why():
    r = parse_reply("```cuda\nint x;\n```\nDESIGN-POINT: lsa/fused_persistent/global_barrier/cta/64K/4")
    assert r.ok and r.point is None and "fused_persistent_needs_fine_signals" in r.point_error


def test_empty_and_garbled_replies_are_parse_failures_with_a_reason():
    assert parse_reply("").error == "the reply is empty"
    assert parse_reply("   \n").error == "the reply is empty"
    assert "holds no ```cuda block" in parse_reply("I think you should use GIN.").error
    assert "never closes it" in parse_reply("```cuda\nint x;\n").error
    assert "malformed" in parse_reply("<<<<<<< SEARCH\nx\n>>>>>>> REPLACE").error
