/* pgss_ng--1.0--1.1.sql: upgrade pgss_ng 1.0 to 1.1 */
-- What 1.1 changes: see the header of pgss_ng--1.1.sql.  This script must
-- leave a 1.0 installation with exactly the objects of a fresh 1.1 (a test
-- compares them).  New columns of a function are only ever appended to
-- its OUT list (the library fills only the columns that the SQL declares).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgss_ng UPDATE TO '1.1'" to load this file. \quit

-- The views that called a function relying on its defaults, again with
-- every argument of its exact type (as pgss_ng--1.1.sql makes them).  1.0
-- bound each view to the extension's own function already: in its schema,
-- first in search_path when the script ran, a function of the same name
-- could only make the call ambiguous, never be chosen over it.
CREATE OR REPLACE VIEW pgss_ng AS
  SELECT * FROM pgss_ng(true, NULL::pg_catalog.timestamptz);
CREATE OR REPLACE VIEW pgss_ng_detail AS
  SELECT * FROM pgss_ng_detail(true, NULL::pg_catalog.timestamptz);

-- pgss_ng_info_memory(), and its columns at the end of the view
-- pgss_ng_info (see pgss_ng--1.1.sql)
CREATE FUNCTION pgss_ng_info_memory(
    OUT entry_bytes bigint,
    OUT qtext_allocated_bytes bigint,
    OUT hist_bytes bigint,
    OUT hist_dropped bigint
)
RETURNS record
AS 'MODULE_PATHNAME', 'pgss_ng_info_memory'
LANGUAGE C STRICT VOLATILE PARALLEL SAFE;

CREATE OR REPLACE VIEW pgss_ng_info AS
  SELECT * FROM pgss_ng_info(), pgss_ng_info_memory();
