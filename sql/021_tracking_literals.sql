--
-- 021_tracking_literals: normalization of every literal syntax of PostgreSQL 15 and
-- of very large or deeply nested statements, compared with
-- pg_stat_statements (the reference) in the same server.  For each group
-- the normalized texts are shown and the two views must not differ (the
-- zero-row comparison prints at most 60 characters of a differing text).
--   * literal syntaxes: '', E'' (escapes, \' and ''), U&'' with and without
--     UESCAPE (the UESCAPE clause stays in the text, as in
--     pg_stat_statements), $$ $$, $tag$ $tag$ (containing $$ and ;), B'',
--     X'', string continuation over a newline, typed literals (DATE '..',
--     interval '1' day, int4 '42', CAST, ::), numeric forms (1e10, .5,
--     5., 1.5e-3, -0, "- 5", -.5, bigint limits, oversize numerics),
--     true/false/NULL, arrays, literals inside comments and nested
--     comments, '$1' as a string, a prepared statement's own $1,
--     standard_conforming_strings off; 0x1F, 0b101, 0o17 and 1_000 are
--     errors on 15 ("trailing junk") and are recorded by neither;
--   * UTF-8 that looks odd but is valid: 2-, 3- and 4-byte characters,
--     U+0080/U+0800/U+10000 boundaries, U+FFFF, U+10FFFF, BOM, RTL override,
--     combining marks, ZWJ emoji, non-ASCII identifiers and comments;
--     an invalid byte sequence is an error and recorded by neither (texts
--     shown with non-ASCII bytes escaped);
--   * size: a 1 MB statement with 150,000 constants, a 1 MB statement
--     without constants (its text stored as is), a 1 MB string constant, a
--     10,000-element IN list, 100 levels of parentheses, of nested
--     subselects and of nested subselects each with a constant.  Their
--     texts are checked by length, md5 and equality with the expected
--     normalized text, never printed in full.
--
-- Expected output: expected/021_tracking_literals.out on PostgreSQL 15; _1.out on
--   16 (0x1F, 0b101, 0o17 and 1_000 are numbers, no longer errors);
--   _2.out on 17 (also DEALLOCATE's name is normalized); _3.out on 18
--   (also lists of constants squashed and SET values normalized).
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;

-- Limit what a failing comparison prints.
CREATE TEMP VIEW lit_diff AS
  SELECT side, toplevel, calls, rows, length(query) AS len,
         left(query, 60) AS query_start
  FROM pgss_ng_diff;

-- String literals.  The column alias is not part of the queryid, so each
-- statement calls another function: one entry (and text) per statement.
SELECT 'plain' AS lit_plain;
SELECT length('it''s') AS lit_doubled_quote;
SELECT octet_length(E'tab\there\nnl \'q\' ''q'' \\ \x41\101\u0041') AS lit_escape;
SELECT upper(e'lower-case e\'') AS lit_escape_lower;
SELECT lower(U&'d\0061t\+000061') AS lit_unicode;
SELECT reverse(U&'d!0061t!+000061' UESCAPE '!') AS lit_uescape;
SELECT initcap(u&'x#0041' uescape '#') AS lit_uescape_lower;
SELECT md5($$dollar 'quoted' \n$$) AS lit_dollar;
SELECT ltrim($tag$with $$ and ; inside$tag$) AS lit_tag;
SELECT rtrim($_x1$ $_x1$) AS lit_tag_odd;
SELECT length(B'1011') AS lit_bit, length(b'01') AS lit_bit_lower;
SELECT X'1F' # x'aB' AS lit_hex;
SELECT btrim('foo'
  'bar') AS lit_continued;
SELECT quote_literal('a' -- a comment between the parts
  'b') AS lit_continued_comment;
SELECT '$1' AS lit_dollar_one, 'x' AS "$2";
SELECT /* 'not a literal' 42 */ 1 AS lit_comment -- 'nor this' 43
;
SELECT /* outer /* inner 'x' */ still 1 */ 2.5 AS lit_nested_comment;
SET standard_conforming_strings = off;
SELECT char_length('a\'b') AS lit_scs_off;
RESET standard_conforming_strings;

-- Typed literals and casts
SELECT DATE '2020-02-29' AS lit_date,
       interval '1' day AS lit_interval_day,
       interval '2 hours' AS lit_interval,
       int4 '42' AS lit_int4, float8 '1.5' AS lit_float8,
       text 'x' AS lit_text, bool 't' AS lit_bool,
       timestamptz '2020-01-01 00:00+00' AS lit_tstz,
       CAST('7' AS int) AS lit_cast, '8'::int AS lit_colons,
       '{1,2}'::int[] AS lit_array_text, ARRAY[1, 2] AS lit_array,
       true AS lit_true, false AS lit_false, NULL::int AS lit_null,
       numeric(5, 2) '1.5' AS lit_numeric_typmod,
       bit varying(4) '101' AS lit_varbit,
       char(3) 'ab' AS lit_char;

-- Numeric forms
SELECT 1e10 AS n1, .5 AS n2, 5. AS n3, 1.5e-3 AS n4, 1E+2 AS n5,
       -0 AS n6, - 5 AS n7, -.5 AS n8, -1e-2 AS n9, 0.0 AS n10,
       2147483647 AS n11, 2147483648 AS n12, 9223372036854775807 AS n13,
       -9223372036854775808 AS n14, 99999999999999999999999 AS n15,
       00042 AS n16, 1 - -1 AS n17, 2-1 AS n18, +3 AS n19;
-- not numeric literals on PostgreSQL 15: errors, recorded by neither
SELECT 0x1F;
SELECT 0b101;
SELECT 0o17;
SELECT 1_000;
SELECT 1e;

-- A prepared statement's parameters are kept, its constants numbered after
PREPARE lit_prep(int, text) AS
  SELECT $1 + 10 AS lit_param, $2 || 'x' AS lit_param_text;
EXECUTE lit_prep(1, 'a');
DEALLOCATE lit_prep;

-- Several statements in one query string, a ';' inside a literal
SELECT $$a;b$$ || 'c' AS lit_multi_1 \; SELECT ';' = ';' AS lit_multi_2 \; SELECT 3 * 3 AS lit_multi_3;

SELECT calls, rows, query FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM lit_diff;

-- UTF-8 that looks odd but is valid (escapes in the texts below: \ooo)
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT length('é') AS u2, length('€') AS u3, length('😀') AS u4;
SELECT octet_length(E'\u0080\u0800\U00010000') AS u_first,
       octet_length(U&'\FFFF\+10FFFF') AS u_last;
SELECT length('﻿bom') AS u_bom, length('‮rtl') AS u_rtl,
       length('é') AS u_combining, length('👩‍👩‍👧') AS u_zwj;
SELECT 'ünïcödé' AS "ünïcödé_côlumn", 1 AS "😀";
SELECT /* ☃ 'snowman' ☃ */ 'ö' AS u_comment -- 'ä'
;
SELECT md5($€$ € $€$) AS u_dollar_tag;
SELECT U&"d\0061t" AS u_ident FROM (SELECT 'x' AS dat) s;
SELECT upper('\xC3\x28') AS u_looks_invalid, upper(E'\xC3\xA9') AS u_escaped;
-- invalid UTF-8 built with escapes: an error, recorded by neither
SELECT E'\xC3\x28' AS u_invalid;
SELECT E'\xF4\x90\x80\x80' AS u_too_big;
SELECT U&'\D800' AS u_surrogate;
SELECT calls, rows,
       replace(encode(convert_to(query, 'UTF8'), 'escape'), E'\n', ' ') AS query
FROM pgss_ng ORDER BY query COLLATE "C";
SELECT * FROM lit_diff;

-- Size: a 1 MB statement with 150,000 constants
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT 'SELECT array_length(ARRAY[' || string_agg(i::text, ',') ||
       '], 1) AS big_array' AS big_stmt
FROM generate_series(100000, 249999) i \gset
SELECT length(:'big_stmt') AS statement_bytes;
:big_stmt;
SELECT 'SELECT array_length(ARRAY[' || string_agg('$' || i, ',') ||
       '], $150001) AS big_array' AS big_norm
FROM generate_series(1, 150000) i \gset
SELECT n.calls, length(n.query) AS len, md5(n.query),
       n.query = :'big_norm' AS as_expected,
       n.query = r.query AS same_as_reference
FROM pgss_ng n JOIN pg_stat_statements r USING (userid, dbid, queryid, toplevel)
WHERE n.query LIKE '%AS big_array';

-- 1 MB without constants: stored as it is
SELECT 'SELECT current_database() IS NOT NULL AS big_plain /* ' ||
       repeat('comment ', 131072) || '*/' AS big_stmt \gset
SELECT length(:'big_stmt') AS statement_bytes;
:big_stmt;
SELECT n.calls, length(n.query) AS len, md5(n.query),
       n.query = :'big_stmt' AS as_expected,
       n.query = r.query AS same_as_reference
FROM pgss_ng n JOIN pg_stat_statements r USING (userid, dbid, queryid, toplevel)
WHERE n.query LIKE '%AS big_plain%';

-- one 1 MB string constant
SELECT 'SELECT octet_length(''' || repeat('abcdefgh', 131072) ||
       ''') AS big_literal' AS big_stmt \gset
SELECT length(:'big_stmt') AS statement_bytes;
:big_stmt;
SELECT n.calls, n.query, n.query = r.query AS same_as_reference
FROM pgss_ng n JOIN pg_stat_statements r USING (userid, dbid, queryid, toplevel)
WHERE n.query LIKE '%AS big_literal';

-- a 10,000-element IN list
SELECT 'SELECT count(*) AS big_in FROM generate_series(1, 30000) g WHERE g IN (' ||
       string_agg((3 * i)::text, ', ') || ')' AS big_stmt
FROM generate_series(1, 10000) i \gset
:big_stmt;
SELECT 'SELECT count(*) AS big_in FROM generate_series($1, $2) g WHERE g IN (' ||
       string_agg('$' || (i + 2), ', ') || ')' AS big_norm
FROM generate_series(1, 10000) i \gset
SELECT n.calls, n.rows, length(n.query) AS len, md5(n.query),
       n.query = :'big_norm' AS as_expected,
       n.query = r.query AS same_as_reference
FROM pgss_ng n JOIN pg_stat_statements r USING (userid, dbid, queryid, toplevel)
WHERE n.query LIKE 'SELECT count(*) AS big_in %';

-- 100 levels: parentheses, subselects, subselects with a constant each
SELECT 'SELECT ' || repeat('(', 100) || '7' || repeat(')', 100) ||
       ' AS deep_parens' AS big_stmt \gset
:big_stmt;
SELECT 'SELECT ' || repeat('(SELECT ', 100) || '7' || repeat(')', 100) ||
       ' AS deep_subselect' AS big_stmt \gset
:big_stmt;
SELECT 'SELECT ' || string_agg('(SELECT ' || i || ' + ', '' ORDER BY i) ||
       '0' || repeat(')', 100) || ' AS deep_constants' AS big_stmt
FROM generate_series(1, 100) i \gset
:big_stmt;
SELECT n.calls, length(n.query) AS len, left(n.query, 20) AS starts,
       right(n.query, 30) AS ends, n.query = r.query AS same_as_reference
FROM pgss_ng n JOIN pg_stat_statements r USING (userid, dbid, queryid, toplevel)
WHERE n.query LIKE '%AS deep%' ORDER BY len;
SELECT query = 'SELECT ' || repeat('(', 100) || '$1' || repeat(')', 100) ||
               ' AS deep_parens' AS parens_as_expected
FROM pgss_ng WHERE query LIKE '%AS deep_parens';
SELECT query = (SELECT 'SELECT ' ||
                       string_agg('(SELECT $' || i || ' + ', '' ORDER BY i) ||
                       '$101' || repeat(')', 100) || ' AS deep_constants'
                FROM generate_series(1, 100) i) AS constants_as_expected
FROM pgss_ng WHERE query LIKE '%AS deep_constants';

-- everything the same as pg_stat_statements, and no text was dropped
SELECT * FROM lit_diff;
SELECT dropped, qtext_dropped FROM pgss_ng_info;
DROP VIEW lit_diff;
