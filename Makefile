# Makefile for pgss_ng (PGXS)
#
# Build and install:   make && make install
# Tests:               see scripts/test.sh (runs the regression and TAP suites
#                      on throwaway servers as an unprivileged user)

MODULE_big = pgss_ng
OBJS = \
	src/pgss_ng.o \
	src/kind.o \
	src/stmt_kind.o \
	src/normalize.o \
	src/qtext.o \
	src/sqlfuncs.o

EXTENSION = pgss_ng
DATA = pgss_ng--1.0.sql
PGFILEDESC = "pgss_ng - scalable tracking of statement statistics"

PG_CPPFLAGS = -I$(srcdir)/src
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
SHLIB_LINK = -lxxhash

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
