"""User text in messages (meanfield_pde.core.errors.printable): control and format characters
escaped, plain text left as it is.
"""

from hypothesis import given, settings, strategies as st


# Issue 13, hostile or absurd input: one escaped line and exit 2, never a traceback (was
# tests/test_input_safety.py).

def test_printable_escapes_control_and_format_characters():
    from meanfield_pde.core.errors import printable
    assert printable("a\nb\x1b[2J\u202ec\x7f\x9b\u2028é") == "a\\nb\\x1b[2J\\u202ec\\x7f\\x9b\\u2028é"
    assert printable("plain 'quoted' text") == "plain 'quoted' text"


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_printable_leaves_no_control_character_and_keeps_plain_text(text):
    import unicodedata
    from meanfield_pde.core.errors import printable
    out = printable(text)
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in out)
    if not any(unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") for c in text):
        assert out == text
