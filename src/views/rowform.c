/*-------------------------------------------------------------------------
 *
 * rowform.c
 *	  Rows of a set-returning function's result without heap_form_tuple's
 *	  per-column generality (docs/design.md, "The shape of the view"):
 *	  columns sorted once per call into pass-by-value and packable varlena;
 *	  each row laid out in two passes into one reused buffer, as
 *	  heap_form_tuple lays it out (checked with assertions).  Other columns,
 *	  or an external or compressed value, take heap_form_tuple's way.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/tupmacs.h"

#include "rowform.h"

/* What a column is, for the row form. */
typedef enum RowAttKind
{
	ROWATT_BYVAL8,				/* 8 bytes by value, double aligned */
	ROWATT_BYVAL4,				/* 4 bytes by value, int aligned */
	ROWATT_BYVAL1,				/* 1 byte by value */
	ROWATT_VARLENA				/* varlena that may be packed */
} RowAttKind;

/* A run of consecutive columns of one kind. */
typedef struct RowAttRun
{
	RowAttKind	kind;
	int			first;			/* its first column */
	int			end;			/* one past its last column */
} RowAttRun;

struct PgssNgRowForm
{
	TupleDesc	tupdesc;
	int			natts;
	bool		generic;		/* a column of another kind: heap_form_tuple */
	RowAttRun  *runs;			/* the columns, in runs of one kind */
	int			nruns;
	char	   *attalign;		/* per column: its alignment */
	int		   *varlena;		/* the varlena columns' numbers */
	int			nvarlena;
	Size		fixed_max;		/* the other columns' bytes, padding included */
	/* the header that heap_form_tuple gives a row of nulls */
	char		header[SizeofHeapTupleHeader];
	char	   *buf;			/* the row being built (HeapTupleHeader) */
	Size		bufsize;
	HeapTupleData tuple;		/* points to buf */
};

/*
 * pgss_ng_rowform_make
 *		A row form for rows of tupdesc, which must live as long as the
 *		form.  Memory: CurrentMemoryContext (the form and its buffer).
 */
PgssNgRowForm *
pgss_ng_rowform_make(TupleDesc tupdesc)
{
	PgssNgRowForm *rf = palloc0(sizeof(PgssNgRowForm));
	int			n = Max(tupdesc->natts, 1);
	int			i;

	rf->tupdesc = tupdesc;
	rf->natts = tupdesc->natts;
	rf->runs = palloc(sizeof(RowAttRun) * n);
	rf->attalign = palloc(sizeof(char) * n);
	rf->varlena = palloc(sizeof(int) * n);
	rf->generic = rf->natts > MaxTupleAttributeNumber;
	for (i = 0; i < rf->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);
		RowAttKind	kind;

		rf->attalign[i] = att->attalign;
		if (att->attbyval && att->attlen == 8 &&
			att->attalign == TYPALIGN_DOUBLE)
			kind = ROWATT_BYVAL8;
		else if (att->attbyval && att->attlen == 4 &&
				 att->attalign == TYPALIGN_INT)
			kind = ROWATT_BYVAL4;
		else if (att->attbyval && att->attlen == 1 &&
				 att->attalign == TYPALIGN_CHAR)
			kind = ROWATT_BYVAL1;
		else if (att->attlen == -1 && att->attstorage != TYPSTORAGE_PLAIN)
		{
			kind = ROWATT_VARLENA;
			rf->varlena[rf->nvarlena++] = i;
		}
		else
		{
			rf->generic = true;
			continue;
		}
		if (kind != ROWATT_VARLENA)
			rf->fixed_max += att->attlen + MAXIMUM_ALIGNOF;
		if (rf->nruns > 0 && rf->runs[rf->nruns - 1].kind == kind)
			rf->runs[rf->nruns - 1].end = i + 1;
		else
		{
			rf->runs[rf->nruns].kind = kind;
			rf->runs[rf->nruns].first = i;
			rf->runs[rf->nruns].end = i + 1;
			rf->nruns++;
		}
	}
	/*
	 * The header fields that do not depend on the data, as this server's
	 * heap_form_tuple sets them (minor versions have added marks there),
	 * from a row of nulls.
	 */
	if (!rf->generic)
	{
		Datum	   *v = palloc0(sizeof(Datum) * n);
		bool	   *isnull = palloc(sizeof(bool) * n);
		HeapTuple	t;

		memset(isnull, true, sizeof(bool) * n);
		t = heap_form_tuple(tupdesc, v, isnull);
		memcpy(rf->header, t->t_data, SizeofHeapTupleHeader);
		heap_freetuple(t);
		pfree(v);
		pfree(isnull);
	}
	rf->bufsize = 1024;
	rf->buf = palloc(rf->bufsize);
	return rf;
}

/*
 * not_null_bits
 *		The null bitmap's byte for eight columns from their null flags: bit
 *		k set when nulls[k] is false (a bool is one byte holding 0 or 1).
 */
static inline bits8
not_null_bits(const bool *nulls)
{
#ifdef WORDS_BIGENDIAN
	bits8		b = 0;
	int			k;

	for (k = 0; k < 8; k++)
		b |= (bits8) (!nulls[k] << k);
	return b;
#else
	uint64		x;

	memcpy(&x, nulls, 8);
	x ^= UINT64CONST(0x0101010101010101);	/* 1 where not null */

	/*
	 * The product collects the low bit of byte k into bit 56 + k, each
	 * product term at a bit of its own (no carries)
	 */
	return (bits8) ((x * UINT64CONST(0x0102040810204080)) >> 56);
#endif
}

/*
 * put_byval_run
 *		Store the non-null values of columns i .. end - 1 of a run, each
 *		len bytes passed by value, from data on (aligned by the caller: in
 *		a run only the first stored value may need padding); returns the
 *		end.  Always inlined with a constant len, so each run's loop stores
 *		without a switch on the length.
 */
static pg_attribute_always_inline char *
put_byval_run(char *data, const Datum *values, const bool *nulls,
			  int i, int end, int len)
{
	for (; i < end; i++)
	{
		if (nulls[i])
			continue;
		store_att_byval(data, values[i], len);
		data += len;
	}
	return data;
}

/*
 * pgss_ng_rowform_put
 *		Put the row (values, nulls) into store.  Memory: the store's for
 *		the row; the form's buffer may grow (CurrentMemoryContext must be
 *		the one the form was made in, or one that lives as long).
 */
void
pgss_ng_rowform_put(PgssNgRowForm *rf, Tuplestorestate *store,
					const Datum *values, const bool *nulls)
{
	Size		max_len;
	Size		len;
	int			hoff;
	bool		hasnull;
	uint16		infomask = 0;
	HeapTupleHeader td;
	char	   *data;
	int			i;
	int			r;

	if (rf->generic)
		goto generic;

	/* the header, and room enough for the data */
	hasnull = memchr(nulls, true, rf->natts * sizeof(bool)) != NULL;
	hoff = MAXALIGN(offsetof(HeapTupleHeaderData, t_bits) +
					(hasnull ? BITMAPLEN(rf->natts) : 0));
	max_len = hoff + rf->fixed_max;
	for (i = 0; i < rf->nvarlena; i++)
	{
		int			k = rf->varlena[i];
		Pointer		p;

		if (nulls[k])
			continue;
		p = DatumGetPointer(values[k]);
		if (VARATT_IS_EXTERNAL(p) || VARATT_IS_COMPRESSED(p))
			goto generic;
		max_len += VARSIZE_ANY(p) + MAXIMUM_ALIGNOF;
	}
	if (max_len > rf->bufsize)
	{
		rf->bufsize = Max(max_len, rf->bufsize * 2);
		rf->buf = repalloc(rf->buf, rf->bufsize);
	}
	/* padding is zero, as in a palloc0'd tuple */
	memset(rf->buf, 0, max_len);
	td = (HeapTupleHeader) rf->buf;
	memcpy(td, rf->header, SizeofHeapTupleHeader);
	td->t_infomask &= ~(HEAP_HASNULL | HEAP_HASVARWIDTH | HEAP_HASEXTERNAL);
	td->t_hoff = hoff;
	if (hasnull)
	{
		/* a bit per column, set when not null; a byte at a time */
		for (i = 0; i + 8 <= rf->natts; i += 8)
			td->t_bits[i >> 3] = not_null_bits(nulls + i);
		for (; i < rf->natts; i++)
			td->t_bits[i >> 3] |= (bits8) (!nulls[i] << (i & 7));
		infomask |= HEAP_HASNULL;
	}

	/*
	 * The data: each value aligned as heap_fill_tuple aligns it, which is
	 * only where a value is stored (a null takes no room and no padding).
	 * In a run of fixed-size values only the first stored one may need
	 * padding.
	 */
	data = rf->buf + hoff;
	for (r = 0; r < rf->nruns; r++)
	{
		const RowAttRun *run = &rf->runs[r];

		/* the run's first stored value */
		for (i = run->first; i < run->end && nulls[i]; i++)
			;
		if (i == run->end)
			continue;
		switch (run->kind)
		{
			case ROWATT_BYVAL8:
				data = (char *) att_align_nominal(data, TYPALIGN_DOUBLE);
				data = put_byval_run(data, values, nulls, i, run->end, 8);
				break;
			case ROWATT_BYVAL4:
				data = (char *) att_align_nominal(data, TYPALIGN_INT);
				data = put_byval_run(data, values, nulls, i, run->end, 4);
				break;
			case ROWATT_BYVAL1:
				data = put_byval_run(data, values, nulls, i, run->end, 1);
				break;
			case ROWATT_VARLENA:
				infomask |= HEAP_HASVARWIDTH;
				for (; i < run->end; i++)
				{
					Pointer		p;
					Size		n;

					if (nulls[i])
						continue;
					p = DatumGetPointer(values[i]);
					if (VARATT_IS_SHORT(p))
					{
						n = VARSIZE_SHORT(p);
						memcpy(data, p, n);
					}
					else if (VARATT_CAN_MAKE_SHORT(p))
					{
						/* packed into a short header, not aligned */
						n = VARATT_CONVERTED_SHORT_SIZE(p);
						SET_VARSIZE_SHORT(data, n);
						memcpy(data + 1, VARDATA(p), n - 1);
					}
					else
					{
						data = (char *) att_align_nominal(data,
														  rf->attalign[i]);
						n = VARSIZE(p);
						memcpy(data, p, n);
					}
					data += n;
				}
				break;
		}
	}
	td->t_infomask |= infomask;
	len = data - rf->buf;
	Assert(len <= max_len);
	HeapTupleHeaderSetDatumLength(td, len);

	rf->tuple.t_len = len;
	ItemPointerSetInvalid(&rf->tuple.t_self);
	rf->tuple.t_tableOid = InvalidOid;
	rf->tuple.t_data = td;

#ifdef USE_ASSERT_CHECKING
	{
		/* the same bytes as heap_form_tuple's */
		HeapTuple	check = heap_form_tuple(rf->tupdesc,
											unconstify(Datum *, values),
											unconstify(bool *, nulls));

		Assert(check->t_len == len);
		Assert(memcmp(check->t_data, td, len) == 0);
		heap_freetuple(check);
	}
#endif

	tuplestore_puttuple(store, &rf->tuple);
	return;

generic:
	tuplestore_putvalues(store, rf->tupdesc, unconstify(Datum *, values),
						 unconstify(bool *, nulls));
}
