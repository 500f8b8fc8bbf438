--
-- 002_tracking_normalize: normalized query texts.  Constants of every literal syntax
-- become $n, statements that differ only in constants share one entry (the
-- first text seen is kept), comments and multi-statement strings keep each
-- statement's own text, utility statements keep their constants, and
-- PREPAREd statements number their constants after the parameters.  Every
-- text must equal pg_stat_statements' (pgss_ng_diff is empty), including
-- its odd cases (a negated parenthesized constant).
--
-- Note: column aliases are not part of a query's identity, so every group
-- below uses expressions of its own shape.
--
-- Expected output: expected/002_tracking_normalize.out on PostgreSQL 15 and 16;
--   _1.out on 17 (DEALLOCATE is normalized: one entry whatever the name);
--   _2.out on 18 (lists of constants squashed to one, SET values
--   normalized, a leading comment no longer part of the text).
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;

-- integers; a negative number is one constant, with or without a space
-- or a comment after the minus; the first text is kept
SELECT 42 AS i;
SELECT -1 AS i;
SELECT - 1 AS i;
SELECT - /* minus */ 3 AS i;
SELECT   7   AS   i;

-- numeric, float and bigint literals
SELECT 1.5 AS num, -2.5e3 AS flt, 100000000000 AS big;
SELECT 0.25 AS num, 1e-3 AS flt, -99999999999 AS big;

-- every string syntax
SELECT 'plain' AS s, E'tab\there' AS e, U&'\0041BC' AS u,
       $$dollar 'quoted'$$ AS d, $tag$tagged $$ text$tag$ AS t;
SELECT 'other' AS s, E'\x41' AS e, U&'d\0061ta' AS u,
       $$x$$ AS d, $tag$y$tag$ AS t;
-- UESCAPE and a string continued on the next line
SELECT U&'d!0061ta' UESCAPE '!' AS u, 1::bigint AS b;
SELECT 'con'
       'tinued' AS c, 1.0::float8 AS f;

-- bit strings
SELECT B'1010' AS b, X'1F' AS x;

-- typed literals, casts, arrays
SELECT date '2024-01-31' AS d, interval '2 hours' AS i,
       timestamptz '2024-01-31 12:00:00+00' AS ts, '42'::int4 AS c1,
       CAST('7' AS numeric) AS c2;
SELECT date '1999-12-31' AS d, interval '1 day' AS i,
       timestamptz '2000-01-01 00:00:00+00' AS ts, '0'::int4 AS c1,
       CAST('1.5' AS numeric) AS c2;
SELECT ARRAY[1, 2] AS a, '{3,4}'::int[] AS b, interval '1' day AS c;

-- booleans and NULL
SELECT true AS t, NULL::int AS n;

-- a constant used twice by the parser (BETWEEN) gets one symbol
SELECT 5 BETWEEN 1 AND 9 AS btw;

-- pg_stat_statements takes "-(" as the extent of a negated constant in
-- parentheses; pgss_ng must produce the very same text
SELECT -(5) AS paren, 'p' || 'q' AS pq;
-- ... and the same for a negated negative constant (from the outer minus
-- through the next token)
SELECT - -2 AS dbl, 1.0 AS f, 'n' || 'm' AS nm;

-- IN lists: one entry per list length
SELECT g FROM generate_series(1, 5) g WHERE g IN (1, 2, 3);
SELECT g FROM generate_series(1, 5) g WHERE g IN (3, 4, 5);
SELECT g FROM generate_series(1, 5) g WHERE g IN (5, 6);

-- LIMIT / OFFSET (LIMIT ALL is a NULL constant too)
SELECT g FROM generate_series(1, 10) g ORDER BY g LIMIT 3 OFFSET 2;
SELECT g FROM generate_series(1, 10) g ORDER BY g LIMIT 1 OFFSET 9;
SELECT g FROM generate_series(1, 3) g LIMIT ALL;

-- comments before and inside a statement stay in its text
/* before */ SELECT 10 /* inside */ + 20 AS sum -- after
;
/* another */ SELECT 3 /* comment */ + 4 AS sum;

-- one simple-protocol message holding four statements
SELECT 100 - 1 AS m \; SELECT 200, 'x' \; /* third */ SELECT 300 * 2 \; SELECT 400, 'y';
-- ... and statements without constants, utility statements among them
SELECT current_user IS NOT NULL AS cu \; SET work_mem = '3MB' \; SELECT 9 / 3 \; RESET work_mem;

-- multibyte characters before and between constants (offsets are bytes)
SELECT 'héllo' AS "naïve", 'ünï' || '✓' AS "ü", 12 AS "€";

-- utility statements keep their constants: one entry per text
SET work_mem = '1MB';
SET work_mem = '2MB';
RESET work_mem;
CREATE TABLE norm_t (a int DEFAULT 5, b text DEFAULT 'b');
INSERT INTO norm_t VALUES (1, 'one'), (2, 'two');
INSERT INTO norm_t VALUES (3, 'three'), (4, 'four');
UPDATE norm_t SET b = 'x' WHERE a = 1;
DELETE FROM norm_t WHERE a > 3;
DROP TABLE norm_t;

-- statements with external parameters: the PREPARE's text, constants
-- numbered after the parameters; EXECUTE and DEALLOCATE are not entries
PREPARE norm_p(int, text) AS SELECT $1 + 100 AS a, $2 || 'z' AS b;
EXECUTE norm_p(1, 'a');
EXECUTE norm_p(2, 'b');
DEALLOCATE norm_p;
PREPARE norm_q AS SELECT 17 % 5 AS r;
EXECUTE norm_q;
DEALLOCATE norm_q;

SELECT toplevel, calls, rows, plans, query FROM pgss_ng
ORDER BY query COLLATE "C", toplevel;
SELECT * FROM pgss_ng_diff;
