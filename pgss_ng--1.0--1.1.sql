/* pgss_ng--1.0--1.1.sql: upgrade pgss_ng 1.0 to 1.1 */
-- What 1.1 changes: see the header of pgss_ng--1.1.sql.  This script must
-- leave a 1.0 installation with exactly the objects of a fresh 1.1 (a test
-- compares them).  New columns of a function are only ever appended to
-- its OUT list (the library fills only the columns that the SQL declares).

-- complain if script is sourced in psql, rather than via ALTER EXTENSION
\echo Use "ALTER EXTENSION pgss_ng UPDATE TO '1.1'" to load this file. \quit
