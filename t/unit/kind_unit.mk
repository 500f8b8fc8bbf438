# t/unit/kind_unit.mk
#	Builds the kind layer's unit test library, kind_unit.so: the fake kind
#	t/unit/kind_unit.c with the layer (src/kind/: kind_*.c, and errlimit.c that
#	kind_guard.c uses) and nothing else of pgss_ng, so that the library
#	only loads if the layer needs nothing of the statement kind.  PGXS, out
#	of tree: t/130_kind_unit.pl runs
#	  make -C BUILDDIR -f SRCDIR/t/unit/kind_unit.mk PG_CONFIG=...
#	with BUILDDIR a temporary directory, where every object is built
#	afresh (never the extension's, which may be in SRCDIR/src, built with
#	other flags), and preloads BUILDDIR/kind_unit.so by its path.  Nothing
#	here is installed ("make install" of the extension does not know this
#	file).

# the source tree: two directories above this file.  The sources are looked
# for in t/unit/ and src/kind/ by name (vpath %.c), whatever VPATH PGXS derives from
# the -f path; objects are never looked for in src/, where the extension's
# own may be (src/kind/).
KIND_UNIT_SRC := $(abspath $(dir $(lastword $(MAKEFILE_LIST)))../..)
vpath %.c $(KIND_UNIT_SRC)/t/unit $(KIND_UNIT_SRC)/src/kind

MODULE_big = kind_unit
OBJS = \
	kind_unit.o \
	$(notdir $(patsubst %.c,%.o,$(sort $(wildcard $(KIND_UNIT_SRC)/src/kind/kind_*.c)))) \
	errlimit.o
PGFILEDESC = "kind_unit - unit test of pgss_ng's kind layer"

# the extension's flags (Makefile), with its Assert()s always on
PG_CPPFLAGS = -I$(KIND_UNIT_SRC)/src -DUSE_ASSERT_CHECKING
PG_CFLAGS = -Wall -Wextra -Werror -Wno-unused-parameter -Wno-missing-field-initializers -Wno-sign-compare
SHLIB_LINK = -lxxhash
# no LLVM bitcode for JIT inlining (a test library; saves a clang pass)
override with_llvm = no

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)
