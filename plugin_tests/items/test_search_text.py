"""search_text directly: folding, words, query terms, highlights; and, as properties, that no
query can produce FTS5 syntax errors and that per-character folding equals whole-text folding
(which the highlight offsets rely on)."""

from __future__ import annotations

import html
import re
import sqlite3
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kernel.testing import examples
from plugins.items.search.index import scope_token
from plugins.items.search.sqlite import match_expression
from plugins.items.search.text import (
    MAX_TERMS,
    MAX_TOKEN,
    Term,
    fold,
    fold_char,
    highlight,
    index_text,
    query_terms,
    tokens,
)


@pytest.mark.parametrize(("raw", "folded"), [
    ("Phở bò Hà Nội", "pho bo ha noi"),
    ("ĂÂĐÊÔƠƯ ăâđêôơư", "aadeoou aadeoou"),
    ("àảãáạ ằẳẵắặ ầẩẫấậ ỳỷỹýỵ", "aaaaa aaaaa aaaaa yyyyy"),
    ("Øresund Smørrebrød", "oresund smorrebrod"),
    ("Łódź", "lodz"),
    ("Straße STRASSE ẞ", "strasse strasse ss"),
    ("Æsir œuvre Þór", "aesir oeuvre thor"),
    ("Ｆｕｌｌ ﬁne ²", "full fine 2"),
    ("e\u0301te\u0301", "ete"),  # decomposed input
    ("İstanbul", "istanbul"),
])
def test_fold(raw: str, folded: str):
    assert fold(raw) == folded


def test_tokens_split_on_everything_but_letters_and_digits():
    assert tokens('snake_case "quoted" a:b (x) e-mail 3.14 中文 Привет') == [
        "snake", "case", "quoted", "a", "b", "x", "e", "mail", "3", "14", "中文", "привет"]
    assert tokens("x" * 100) == ["x" * MAX_TOKEN]


def test_index_text():
    assert index_text("   --- ") is None
    short, long = index_text("Phở"), index_text("Phở " * 50)
    assert short.body == "pho" and long.body == "pho"  # distinct words only
    assert short.norm > long.norm  # shorter values weigh more


def test_query_terms():
    assert query_terms("pho bo") == [Term("pho"), Term("bo", prefix=True)]
    assert query_terms("bo pho bo") == [Term("bo", prefix=True), Term("pho")]
    assert query_terms('"NEAR" AND (x*) :') == [Term("near"), Term("and"), Term("x", prefix=True)]
    assert query_terms("*:() \"'") == []
    assert len(query_terms(" ".join(f"w{n}" for n in range(40)))) == MAX_TERMS


def test_highlight():
    assert highlight("Phở bò <b>", query_terms("pho")) == "<mark>Phở</mark> bò &lt;b&gt;"
    assert highlight("cafe\u0301 noir", query_terms("cafe")) == "<mark>cafe\u0301</mark> noir"
    assert highlight("Nothing here", query_terms("pho")) is None
    snippet = highlight("a " * 100 + "target" + " b" * 100, query_terms("target"))
    assert snippet.startswith("…") and snippet.endswith("…") and "<mark>target</mark>" in snippet
    assert highlight("phong pho", [Term("pho")]) == "phong <mark>pho</mark>"
    assert highlight("a ¼ b", query_terms("1 4")) == "a <mark>¼</mark> b"  # folds to two words
    assert highlight("Straße", query_terms("strasse")) == "<mark>Straße</mark>"


def _fts() -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE f USING fts5(scope, body, tokenize='unicode61 remove_diacritics 0', "
                 "prefix='2 3')")
    conn.execute("INSERT INTO f VALUES (?, ?)", (scope_token("s", "c", "title"), "pho bo ha noi"))
    return conn


FTS = _fts()
SCOPES = [SimpleNamespace(coll=SimpleNamespace(id="c"), fields=("title", "body"))]


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=200))
def test_no_query_is_fts5_syntax(q: str):
    for term in query_terms(q):
        assert re.fullmatch(r"[^\W_]+", term.word)
        # Raises sqlite3.OperationalError on a syntax error.
        FTS.execute("SELECT rowid FROM f WHERE f MATCH ?", (match_expression(term, SCOPES, "s"),)).fetchall()


def test_match_expression_finds_only_in_scope():
    def hits(q: str, site: str = "s") -> int:
        [term] = query_terms(q)
        return len(FTS.execute("SELECT rowid FROM f WHERE f MATCH ?", (match_expression(term, SCOPES, site),))
                   .fetchall())
    assert hits("pho") == 1 and hits("ph") == 1 and hits("noi") == 1
    assert hits("pho", site="other") == 0
    assert hits("zebra") == 0


@settings(max_examples=examples(300), deadline=None)
@given(st.text(max_size=80))
def test_folding_char_by_char_equals_folding_the_text(text: str):
    assert "".join(fold_char(c) for c in text) == fold(text)


@settings(max_examples=examples(200), deadline=None)
@given(st.text(max_size=300), st.text(min_size=1, max_size=20))
def test_highlight_is_escaped_text_of_the_value(value: str, q: str):
    snippet = highlight(value, query_terms(q))
    if snippet is None:
        return
    plain = html.unescape(re.sub(r"</?mark>", "", snippet)).strip("…")
    assert plain in value
    assert "<" not in re.sub(r"</?mark>", "", snippet)
