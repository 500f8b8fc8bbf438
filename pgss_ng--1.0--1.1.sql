/* pgss_ng--1.0--1.1.sql: upgrade pgss_ng 1.0 to 1.1 */
-- What 1.1 changes: see the header of pgss_ng--1.1.sql.  This script must
-- leave a 1.0 installation with exactly the objects of a fresh 1.1 (a test
-- compares them).  New columns of a function are only ever appended to
-- its OUT list (the library fills only the columns that the SQL declares).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgss_ng UPDATE TO '1.1'" to load this file. \quit

-- The views again, each call with every argument of its exact type: a
-- view of 1.0 that called pgss_ng(true) or pgss_ng_detail(true) is bound
-- anew to the extension's own function.  The views without arguments too
-- (zero-argument calls: an exact match in 1.0 already), so that every
-- query of 1.0 is re-made by this script.
CREATE OR REPLACE VIEW pgss_ng AS
  SELECT * FROM pgss_ng(true, NULL::pg_catalog.timestamptz);
CREATE OR REPLACE VIEW pgss_ng_detail AS
  SELECT * FROM pgss_ng_detail(true, NULL::pg_catalog.timestamptz);
CREATE OR REPLACE VIEW pgss_ng_info AS
  SELECT * FROM pgss_ng_info();
CREATE OR REPLACE VIEW pgss_ng_evicted AS
  SELECT * FROM pgss_ng_evicted();
CREATE OR REPLACE VIEW pgss_ng_evictions AS
  SELECT * FROM pgss_ng_evictions();
