--
-- 022_ext_security: what a role without pg_read_all_stats can learn, and the
-- install script against hostile objects.
--   * Texts of other roles never reach an unprivileged role: in the view
--     and in pgss_ng(true) their rows have a NULL queryid and the text
--     "<insufficient privilege>", in pgss_ng(false) a NULL queryid and
--     text, and pgss_ng_detail as pgss_ng; the role sees exactly what
--     pg_stat_statements shows it.
--     pgss_ng_reset() by queryid fails with the same message whether the
--     queryid exists or not, and removes nothing.  It cannot change the
--     pgss_ng.track* settings (SET, set_config, ALTER SYSTEM: 42501), nor
--     create the extension (not trusted).
--   * Install script (run in a database of its own, dropped at the end):
--     a hostile role that may create objects in public pre-creates
--       - a function with the exact signature of pgss_ng(boolean,
--         timestamptz),
--       - a view named pgss_ng_info,
--     and each time CREATE EXTENSION fails cleanly: no extension, no
--     object adopted or changed, the hostile functions never called (they
--     log every call and try to make their owner superuser).  Overloads
--     pgss_ng(boolean, int DEFAULT 0) (which made 1.0's call pgss_ng(true)
--     ambiguous) and pgss_ng(VARIADIC boolean[]) are not chosen over the
--     extension's own function: the views call it with every argument.
--     With a hostile schema first in search_path holding
--     functions with the extension's names and domains named like the
--     types the script uses (int8, oid, text, ...), and a temporary view
--     named pgss_ng in the installing session, CREATE EXTENSION
--     pgss_ng SCHEMA public uses none of them: CREATE EXTENSION runs the
--     script with search_path = the target schema (pg_catalog implicitly
--     first, pg_temp last), so unqualified names in the install script
--     cannot resolve to the hostile objects.  The installed script (of
--     the default version) contains neither CREATE OR REPLACE nor IF NOT
--     EXISTS.  The script's CONTEXT lines are not shown (their line
--     numbers change with the script).
-- pgss_ng_diff stays empty.
--
-- Expected output: expected/022_ext_security.out on PostgreSQL 15, 16 and 17;
--   _1.out on 18 (SET values are normalized).
--
SELECT pgss_ng_reset() IS NOT NULL, pg_stat_statements_reset() IS NOT NULL;
SELECT current_database() AS sec_db \gset
CREATE ROLE regress_pgss_ng_spy;
CREATE ROLE regress_pgss_ng_victim;

-- the victim's statements: a utility statement is stored verbatim
SET ROLE regress_pgss_ng_victim;
SET application_name = 'sec-token-4711';
SELECT upper('sec-literal') AS sec_victim_column;
RESET application_name;
RESET ROLE;
-- the superuser's
SELECT 42 AS sec_superuser_column;

SET ROLE regress_pgss_ng_spy;
SELECT 'spy' AS sec_spy;
-- the view and both forms of the function
SELECT userid = 'regress_pgss_ng_spy'::regrole AS own, count(*) AS entries,
       count(queryid) AS with_queryid,
       count(*) FILTER (WHERE query = '<insufficient privilege>') AS hidden,
       count(*) FILTER (WHERE query ~ '4711|sec_victim|sec_superuser')
         AS telling
FROM pgss_ng GROUP BY own ORDER BY own;
SELECT userid = 'regress_pgss_ng_spy'::regrole AS own, count(*) AS entries,
       count(queryid) AS with_queryid,
       count(*) FILTER (WHERE query = '<insufficient privilege>') AS hidden
FROM pgss_ng(true) GROUP BY own ORDER BY own;
SELECT userid = 'regress_pgss_ng_spy'::regrole AS own, count(*) AS entries,
       count(queryid) AS with_queryid, count(query) AS with_text
FROM pgss_ng(false) GROUP BY own ORDER BY own;
-- pgss_ng_detail: the same
SELECT userid = 'regress_pgss_ng_spy'::regrole AS own, count(*) AS entries,
       count(queryid) AS with_queryid,
       count(*) FILTER (WHERE query = '<insufficient privilege>') AS hidden
FROM pgss_ng_detail GROUP BY own ORDER BY own;
-- its own statements in full
SELECT calls, query FROM pgss_ng
WHERE userid = 'regress_pgss_ng_spy'::regrole ORDER BY query COLLATE "C";
-- exactly what pg_stat_statements shows it
SELECT count(*) AS differences FROM pgss_ng_diff;
-- pgss_ng_info is readable
SELECT dealloc, dropped FROM pgss_ng_info;

-- reset by queryid: the queryid of the victim's SELECT (the spy gets it
-- by running the same statement) and one that exists nowhere fail alike
SELECT upper('x') AS sec_victim_column;
SELECT queryid AS sec_qid FROM pgss_ng
WHERE userid = 'regress_pgss_ng_spy'::regrole
  AND query LIKE '%AS sec_victim_column' \gset
SELECT pgss_ng_reset(0, 0, :sec_qid);
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset('regress_pgss_ng_victim'::regrole, 0, :sec_qid);
\echo SQLSTATE :SQLSTATE
SELECT pgss_ng_reset(0, 0, 1234567);
\echo SQLSTATE :SQLSTATE
DO $$
BEGIN
  PERFORM pgss_ng_reset(0, 0, queryid) FROM pgss_ng
  WHERE query LIKE '%AS sec_victim_column';
EXCEPTION WHEN OTHERS THEN
  RAISE NOTICE 'SQLSTATE %, message "%"', SQLSTATE, SQLERRM;
END $$;

-- it cannot stop tracking, for itself or anyone
SET pgss_ng.track = 'none';
\echo SQLSTATE :SQLSTATE
SET pgss_ng.track_utility = off;
SET pgss_ng.track_planning = on;
SELECT set_config('pgss_ng.track', 'none', false);
ALTER SYSTEM SET pgss_ng.track = 'none';
\echo SQLSTATE :SQLSTATE

-- the shared text arena's counters would tell whether another role ran a
-- guessed text: hidden from it (the cap itself is a setting)
SELECT qtext_bytes IS NULL AS bytes_hidden, qtext_count IS NULL AS count_hidden,
       qtext_dropped IS NULL AS dropped_hidden, qtext_limit_bytes > 0 AS limit_shown
FROM pgss_ng_info;
RESET ROLE;
SELECT qtext_bytes > 0 AND qtext_count > 0 AND qtext_dropped = 0 AS superuser_sees_them
FROM pgss_ng_info;

-- nothing was reset: the victim's four entries are there, its SELECT
-- with the queryid the spy tried
SELECT calls, query FROM pgss_ng
WHERE userid = 'regress_pgss_ng_victim'::regrole ORDER BY query COLLATE "C";
SELECT count(*) AS entries, count(DISTINCT userid) AS users,
       count(DISTINCT queryid) AS queryids
FROM pgss_ng WHERE query LIKE '%AS sec_victim_column';
SELECT count(*) AS differences FROM pgss_ng_diff;

--
-- The install script against hostile objects, in a database of its own
--
CREATE DATABASE regress_pgss_ng_hostile;
CREATE ROLE regress_pgss_ng_hostile;
\c regress_pgss_ng_hostile
-- as before PostgreSQL 15: everyone may create objects in public
GRANT CREATE ON SCHEMA public TO regress_pgss_ng_hostile;
-- every call of a hostile function is logged here
CREATE TABLE hostile_calls (fn text, caller name);
GRANT INSERT ON hostile_calls TO PUBLIC;
-- the state to check after each attempt
CREATE VIEW hostile_state AS
SELECT (SELECT count(*) FROM pg_extension WHERE extname = 'pgss_ng')
         AS extension,
       (SELECT count(*) FROM hostile_calls) AS hostile_calls,
       (SELECT rolsuper FROM pg_roles
        WHERE rolname = 'regress_pgss_ng_hostile') AS hostile_is_superuser,
       (SELECT string_agg(p.oid::regprocedure || ' owned by ' ||
                          p.proowner::regrole, ', '
                          ORDER BY p.oid::regprocedure::text)
        FROM pg_proc p
        WHERE p.proname LIKE 'pgss\_ng%') AS functions,
       (SELECT string_agg(c.relname || ' owned by ' ||
                          c.relowner::regrole || ', granted to PUBLIC: ' ||
                          coalesce((SELECT string_agg(a.privilege_type, ' ')
                                    FROM aclexplode(c.relacl) a
                                    WHERE a.grantee = 0), '-'), ', '
                          ORDER BY c.relname)
        FROM pg_class c
        WHERE c.relname LIKE 'pgss\_ng%') AS relations,
       (SELECT count(*) FROM pg_depend d
        JOIN pg_extension e ON d.refobjid = e.oid
        WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
          AND e.extname = 'pgss_ng'
          -- from PostgreSQL 17 the views' row and array types are members
          -- too; count the members the script creates
          AND d.classid <> 'pg_type'::regclass) AS extension_members;

-- the hostile role may not create the extension itself (not trusted)
SET ROLE regress_pgss_ng_hostile;
CREATE EXTENSION pgss_ng;
\echo SQLSTATE :SQLSTATE
RESET ROLE;

-- 1. a trap with the exact signature of pgss_ng(boolean, timestamptz)
SET ROLE regress_pgss_ng_hostile;
CREATE FUNCTION public.pgss_ng(showtext boolean, changed_since timestamptz)
RETURNS SETOF int
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('pgss_ng(boolean, timestamptz)', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN;
END $$;
RESET ROLE;
\set SHOW_CONTEXT never
CREATE EXTENSION pgss_ng;
\set SHOW_CONTEXT errors
SELECT * FROM hostile_state;
DROP FUNCTION public.pgss_ng(boolean, timestamptz);

-- 2. a view named like the extension's view
SET ROLE regress_pgss_ng_hostile;
CREATE FUNCTION public.hostile_fn() RETURNS int
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('hostile_fn()', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN 1;
END $$;
CREATE VIEW public.pgss_ng_info AS SELECT public.hostile_fn() AS dealloc;
RESET ROLE;
\set SHOW_CONTEXT never
CREATE EXTENSION pgss_ng;
\set SHOW_CONTEXT errors
SELECT * FROM hostile_state;
DROP VIEW public.pgss_ng_info;

-- 3. an overload that would make a call pgss_ng(true) ambiguous
SET ROLE regress_pgss_ng_hostile;
CREATE FUNCTION public.pgss_ng(showtext boolean, x int DEFAULT 0)
RETURNS SETOF int
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('pgss_ng(boolean, int)', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN;
END $$;
RESET ROLE;
CREATE EXTENSION pgss_ng;
SELECT count(*) > 0 AS view_has_rows FROM public.pgss_ng;
SELECT count(*) > 0 AS detail_has_rows FROM public.pgss_ng_detail;
SELECT extension, hostile_calls, hostile_is_superuser, extension_members
FROM hostile_state;
DROP EXTENSION pgss_ng;
DROP FUNCTION public.pgss_ng(boolean, int);

-- 4. a variadic overload: the extension's exact match is chosen
SET ROLE regress_pgss_ng_hostile;
CREATE FUNCTION public.pgss_ng(VARIADIC showtext boolean[])
RETURNS SETOF int
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('pgss_ng(boolean[])', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN;
END $$;
RESET ROLE;
CREATE EXTENSION pgss_ng;
SELECT count(*) > 0 AS view_has_rows FROM public.pgss_ng;
SELECT count(*) = 1 AS info_has_a_row FROM public.pgss_ng_info;
SELECT extension, hostile_calls, hostile_is_superuser, extension_members
FROM hostile_state;
DROP EXTENSION pgss_ng;
DROP FUNCTION public.pgss_ng(boolean[]);

-- 5. a hostile schema first in search_path, shadowing the names the
-- script uses: the extension's functions and the types of their arguments
CREATE SCHEMA regress_pgss_ng_hostile AUTHORIZATION regress_pgss_ng_hostile;
SET ROLE regress_pgss_ng_hostile;
CREATE FUNCTION regress_pgss_ng_hostile.pgss_ng(showtext boolean)
RETURNS SETOF int
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('shadow pgss_ng', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN;
END $$;
CREATE FUNCTION regress_pgss_ng_hostile.pgss_ng_info() RETURNS SETOF int
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('shadow pgss_ng_info', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN;
END $$;
CREATE FUNCTION regress_pgss_ng_hostile.hostile_check(anyelement)
RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO public.hostile_calls VALUES ('domain check', current_user);
  ALTER ROLE regress_pgss_ng_hostile SUPERUSER;
  RETURN true;
END $$;
CREATE DOMAIN regress_pgss_ng_hostile.oid AS pg_catalog.oid
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
CREATE DOMAIN regress_pgss_ng_hostile.int8 AS pg_catalog.int8
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
CREATE DOMAIN regress_pgss_ng_hostile.bool AS pg_catalog.bool
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
CREATE DOMAIN regress_pgss_ng_hostile.float8 AS pg_catalog.float8
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
CREATE DOMAIN regress_pgss_ng_hostile.text AS pg_catalog.text
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
CREATE DOMAIN regress_pgss_ng_hostile.numeric AS pg_catalog.numeric
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
CREATE DOMAIN regress_pgss_ng_hostile.timestamptz AS pg_catalog.timestamptz
  CHECK (regress_pgss_ng_hostile.hostile_check(VALUE));
RESET ROLE;
-- and a temporary view of the installing session named like the view
CREATE TEMP VIEW pgss_ng AS SELECT 1 AS x;
SET search_path = regress_pgss_ng_hostile, pg_catalog, public;
CREATE EXTENSION pgss_ng SCHEMA public;
RESET search_path;
-- the GRANTs of the script went to the extension's views, not the temporary one
SELECT c.relnamespace = pg_my_temp_schema() AS temporary, c.relname,
       (SELECT string_agg(a.privilege_type, ' ') FROM aclexplode(c.relacl) a
        WHERE a.grantee = 0) AS granted_to_public
FROM pg_class c WHERE c.relname LIKE 'pgss\_ng%' ORDER BY 1, 2;
DROP VIEW pg_temp.pgss_ng;
-- all argument and result types are pg_catalog's
SELECT p.proname, count(*) AS types,
       count(*) FILTER (WHERE t.typnamespace <> 'pg_catalog'::regnamespace)
         AS not_pg_catalog
FROM pg_depend d
JOIN pg_proc p ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid
CROSS JOIN LATERAL unnest(coalesce(p.proallargtypes, p.proargtypes::oid[])
                          || p.prorettype) AS a(typ)
JOIN pg_type t ON t.oid = a.typ
WHERE d.refclassid = 'pg_extension'::regclass AND d.deptype = 'e'
  AND d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'pgss_ng')
GROUP BY p.proname ORDER BY p.proname;
-- the views call the extension's own functions
SELECT r.ev_class::regclass AS view,
       p.pronamespace::regnamespace || '.' || p.proname AS calls
FROM pg_rewrite r
JOIN pg_depend d ON d.classid = 'pg_rewrite'::regclass AND d.objid = r.oid
JOIN pg_proc p ON d.refclassid = 'pg_proc'::regclass AND d.refobjid = p.oid
WHERE r.ev_class IN ('public.pgss_ng'::regclass, 'public.pgss_ng_info'::regclass)
ORDER BY 1, 2;
SELECT has_function_privilege('regress_pgss_ng_hostile',
         'public.pgss_ng_reset(oid, oid, bigint, boolean)', 'EXECUTE')
         AS hostile_may_reset;
-- reading works, nothing hostile ran, even with the hostile search_path
SET search_path = regress_pgss_ng_hostile, pg_catalog, public;
SELECT count(*) > 0 AS view_has_rows FROM pgss_ng;
SELECT count(*) = 1 AS info_has_a_row FROM pgss_ng_info;
RESET search_path;
SELECT extension, hostile_calls, hostile_is_superuser FROM hostile_state;
DROP EXTENSION pgss_ng;

-- the installed script: no CREATE OR REPLACE, no IF NOT EXISTS
SELECT count(*) FILTER (WHERE l ~* 'or\s+replace') AS or_replace,
       count(*) FILTER (WHERE l ~* 'if\s+not\s+exists') AS if_not_exists,
       count(*) FILTER (WHERE l ~* '^\s*create\s') > 0 AS creates_objects
FROM (SELECT c.setting || '/extension/pgss_ng--' || a.default_version ||
             '.sql' AS path
      FROM pg_config c, pg_available_extensions a
      WHERE c.name = 'SHAREDIR' AND a.name = 'pgss_ng') f,
     regexp_split_to_table(pg_read_file(f.path), E'\n') AS l;

\c :sec_db
SELECT wait_for_other_backends();
DROP DATABASE regress_pgss_ng_hostile;
DROP ROLE regress_pgss_ng_hostile;
DROP ROLE regress_pgss_ng_spy;
DROP ROLE regress_pgss_ng_victim;
SELECT count(*) AS differences FROM pgss_ng_diff;
