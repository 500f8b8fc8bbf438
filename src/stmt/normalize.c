/*-------------------------------------------------------------------------
 *
 * normalize.c
 *	  Build the normalized text of one statement, byte for byte the same as
 *	  the text the server's own pg_stat_statements stores (1.10 on
 *	  PostgreSQL 15 and 16, 1.11 on 17, 1.12 on 18): the statement's own
 *	  part of the source string, with every constant that core query
 *	  jumbling recorded replaced by a "$n" parameter symbol.
 *
 * Which constants core records is the server's business (16 added those of
 * utility statements); from 18 on it also records squashed lists of
 * constants (IN (1, 2, 3)), written as one "$n" followed by the comment
 * PGSS_NG_SQUASHED_SUFFIX, and external parameters, renumbered only in
 * statements with a squashed list (see pgver.h).
 *
 * Core jumbling (JumbleQuery) only records where each constant starts.  To
 * know how many bytes to replace we re-lex the statement with core's own
 * flex scanner (the same one raw_parser() uses), so every literal syntax
 * the parser accepts ('...', E'...', U&'...', $$...$$, B'...', X'...',
 * numerics, typed literals) is measured exactly as the parser saw it.
 *
 * A constant recorded at a '-' is a negated numeric literal (the grammar
 * moves the location of "-5" to the minus sign); its extent runs from the
 * '-' through the end of the following token, so "- 5" is one constant.
 *
 * Unlike pg_stat_statements, which lets the scanner run on to the end of the
 * whole (possibly multi-statement) source string, we scan a private copy of
 * exactly query_len bytes and never look past the statement.  Statement
 * boundaries are token boundaries, so the lengths found are the same.
 *
 * Locking: none; pure backend-local computation on palloc'd memory.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "common/keywords.h"
#include "parser/scanner.h"
#include "utils/memutils.h"

#include "normalize.h"

/*
 * Bytes of output reserved per constant on top of query_len.  A constant is
 * at least one byte of source text and "$n" is at most 11 bytes ('$' plus
 * ten digits of a positive int), followed for a squashed list by
 * PGSS_NG_SQUASHED_SUFFIX, so this always suffices.
 */
#define NORM_EXTRA_BYTES_PER_CONST	(10 + sizeof(PGSS_NG_SQUASHED_SUFFIX) - 1)

static int	compare_location(const void *a, const void *b);
static void fill_constant_lengths(JumbleState *jstate, const char *query,
								  int query_loc, int query_len);


/*
 * compare_location
 *
 * qsort comparator ordering LocationLen records by ascending location (a
 * byte offset).  Equal locations compare equal; their relative order does
 * not matter because all but the first of a run are ignored as duplicates.
 *
 * Memory: none.  Errors: none.
 */
static int
compare_location(const void *a, const void *b)
{
	int			la = ((const LocationLen *) a)->location;
	int			lb = ((const LocationLen *) b)->location;

	if (la < lb)
		return -1;
	if (la > lb)
		return 1;
	return 0;
}

/*
 * fill_constant_lengths
 *
 * Sort jstate->clocations by location (in place) and set the length, in
 * bytes, of every constant that can be found by lexing the statement.
 * A squashed list (18) comes with its length set by core jumbling and is
 * not lexed.  Other entries that are not measured keep the length -1 they
 * come in with, and are later left alone by the caller:
 *	- duplicates (a location not past the previous measured one);
 *	- locations outside [0, query_len), which cannot belong to this
 *	  statement (these, and everything after them, stop the scan);
 *	- anything after the scanner reached the end of the statement.
 *
 * "query" points at the statement's first byte and holds at least query_len
 * bytes; jstate locations are offsets in the whole source string, so
 * query_loc is subtracted from them.
 *
 * The lexer is started on a NUL-terminated private copy of the query_len
 * bytes, so it can never read beyond the statement.  Flex NUL-terminates
 * the current token inside its scan buffer, which is a byte-for-byte copy
 * of our input, so the length of a constant is strlen() from the
 * constant's location to that terminator; for a negative constant we first
 * lex one more token so the extent covers the '-' and the number.
 *
 * Memory: the copy and all scanner state live in a short-lived child of
 * CurrentMemoryContext that is deleted before returning; if an error
 * escapes, the child goes away with its parent.
 *
 * Errors: none expected, since the text has already been through the same
 * scanner; any scanner ereport(ERROR) would propagate to the caller.
 */
static void
fill_constant_lengths(JumbleState *jstate, const char *query,
					  int query_loc, int query_len)
{
	LocationLen *locs = jstate->clocations;
	int			nlocs = jstate->clocations_count;
	MemoryContext scan_cxt;
	MemoryContext old_cxt;
	char	   *text;
	core_yyscan_t yyscanner;
	core_yy_extra_type yyextra;
	core_YYSTYPE yylval;
	YYLTYPE		yylloc;
	int			last_loc = -1;
	int			i;

	if (nlocs > 1)
		qsort(locs, nlocs, sizeof(LocationLen), compare_location);

	scan_cxt = AllocSetContextCreate(CurrentMemoryContext,
									 "pgss_ng normalize scan",
									 ALLOCSET_SMALL_SIZES);
	old_cxt = MemoryContextSwitchTo(scan_cxt);

	/* Private, NUL-terminated copy of exactly this statement's bytes */
	text = palloc(query_len + 1);
	memcpy(text, query, query_len);
	text[query_len] = '\0';

	/* Same scanner setup as raw_parser() */
	yyscanner = scanner_init(text, &yyextra, &ScanKeywords, ScanKeywordTokens);

	/* The parser already emitted any escape-string warnings; don't repeat */
	yyextra.escape_string_warning = false;

	for (i = 0; i < nlocs; i++)
	{
		int			loc = locs[i].location - query_loc;
		int			tok = 0;

		if (pgss_ng_loc_squashed(&locs[i]))
			continue;			/* length set by core jumbling */
		if (loc < 0)
			continue;			/* not inside this statement; leave at -1 */
		if (loc <= last_loc)
			continue;			/* duplicate of a constant already handled */
		if (loc >= query_len)
			break;				/* past the statement; so are all the rest */

		/* Lex until a token starts at (or, unexpectedly, past) loc */
		for (;;)
		{
			tok = core_yylex(&yylval, &yylloc, yyscanner);
			if (tok == 0)
				break;			/* end of statement */
			if (yylloc < loc)
				continue;

			if (text[loc] == '-')
			{
				/* Negative constant: take in the number after the minus */
				tok = core_yylex(&yylval, &yylloc, yyscanner);
				if (tok == 0)
					break;
			}

			/* Flex has put a NUL right after the current token's text */
			locs[i].length = (int) strlen(yyextra.scanbuf + loc);
			break;
		}

		if (tok == 0)
			break;				/* remaining lengths stay -1 */

		last_loc = loc;
	}

	scanner_finish(yyscanner);

	MemoryContextSwitchTo(old_cxt);
	MemoryContextDelete(scan_cxt);
}

/*
 * pgss_ng_normalize_query
 *
 * See normalize.h for the contract.  Measures the constants with
 * fill_constant_lengths(), then writes the statement with each measured
 * constant replaced by "$N".  N counts only the constants actually replaced
 * (1, 2, 3, ... in text order; duplicates and unmeasured entries take no
 * number) and starts after highest_extern_param_id, so the numbering
 * continues after any $n parameters the statement already had.  This is
 * what pg_stat_statements does in current PostgreSQL 15 minor releases,
 * which no longer leave gaps for duplicate locations (e.g. the constant
 * BETWEEN repeats: "1 between 0 and 2" becomes "$1 between $2 and $3").
 * A squashed list (18) is replaced by "$N" and PGSS_NG_SQUASHED_SUFFIX.
 * An external parameter recorded by jumbling (18) is replaced (renumbered)
 * only when the statement has a squashed list, as pg_stat_statements 1.12
 * does; otherwise its text is kept.
 * Text between and after constants is copied verbatim, up to query_len
 * bytes of input.
 *
 * Units: query_loc, *query_len and all offsets are in bytes.
 *
 * Memory: the result (at most query_len + 10 bytes per constant + 1) is
 * palloc'd in CurrentMemoryContext; scratch memory is freed before
 * returning.
 *
 * Errors: out of memory, or an invalid allocation request for statements
 * near the 1 GB palloc limit (as in pg_stat_statements); a scanner error
 * from fill_constant_lengths() would propagate, but cannot happen for text
 * the parser has just accepted.
 */
char *
pgss_ng_normalize_query(JumbleState *jstate, const char *query,
						int query_loc, int *query_len)
{
	int			in_len = *query_len;
	Size		out_size;
	char	   *out;
	int			out_pos = 0;	/* bytes written to out */
	int			in_pos = 0;		/* bytes of query consumed */
	int			nreplaced = 0;	/* constants replaced so far */
	int			i;

	if (in_len < 0)
		in_len = 0;

	if (jstate->clocations_count > 0)
		fill_constant_lengths(jstate, query, query_loc, in_len);

	out_size = (Size) in_len +
		(Size) jstate->clocations_count * NORM_EXTRA_BYTES_PER_CONST + 1;
	out = palloc(out_size);

	for (i = 0; i < jstate->clocations_count; i++)
	{
		LocationLen *loc = &jstate->clocations[i];
		int			off = loc->location - query_loc;
		int			len = loc->length;

		if (pgss_ng_loc_extern_param(loc) &&
			!pgss_ng_jstate_has_squashed(jstate))
			continue;			/* keep the parameter's own text */
		if (len < 0)
			continue;			/* duplicate or not found: leave as is */

		/*
		 * Lengths are only set inside [0, in_len) and never extend past it.
		 * A constant starting inside the previous replaced extent could only
		 * come from a location the scanner overshot; it is already covered.
		 */
		if (off < in_pos || off + len > in_len)
			continue;

		memcpy(out + out_pos, query + in_pos, off - in_pos);
		out_pos += off - in_pos;

		nreplaced++;
		out_pos += snprintf(out + out_pos, out_size - out_pos, "$%d%s",
							nreplaced + jstate->highest_extern_param_id,
							pgss_ng_loc_squashed(loc) ?
							PGSS_NG_SQUASHED_SUFFIX : "");

		in_pos = off + len;
	}

	memcpy(out + out_pos, query + in_pos, in_len - in_pos);
	out_pos += in_len - in_pos;

	Assert((Size) out_pos < out_size);
	out[out_pos] = '\0';

	*query_len = out_pos;
	return out;
}
