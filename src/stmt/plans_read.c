/*-------------------------------------------------------------------------
 *
 * plans_read.c
 *	  Plan rows copied out and back: the read for pgss_ng_plans(), the save
 *	  of a statement's rows into its stats file record, and their restore.
 *	  docs/design.md, "Plan rows".  Locking: reads and saves under the entry
 *	  lock held shared; a restore inside the restore bracket.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "mb/pg_wchar.h"

#include "plans_int.h"
#include "qtext.h"
#include "stmt_failures.h"
#include "stmt_kind_int.h"

/*
 * What a read of plan rows keeps: the caller's function, the statement
 * copied last and its rows' copies (texts in one buffer).
 */
typedef struct PlansRead
{
	bool		showtext;
	PgssNgPlanEmitFn emit;
	void	   *emit_arg;
	PgssNgStmtKey key;
	PgssNgPlanSnapshot *rows;
	int			nrows;
	int			size;
	StringInfoData texts;
	int		   *text_off;		/* per row: offset in texts, -1: none */
} PlansRead;

/*
 * read_visit
 *		pgss_ng_kind_foreach visitor of pgss_ng_plans_read(): copy a
 *		statement's plan rows with calls (and their texts with showtext).
 *		Entry and partition locks held shared; growing the copies may raise
 *		an out-of-memory ERROR, which aborts the reader's transaction.
 */
static bool
read_visit(PgssNgKind *kind, const void *key, const void *shared_data,
		   void *arg)
{
	const PgssNgStmtPlans *sp = &((const PgssNgStmtShared *) shared_data)->plans;
	PlansRead  *pr = (PlansRead *) arg;
	dsa_area   *area = pgss_ng_kind_area(kind);
	dsa_pointer p;

	if (sp->nrows == 0)
		return false;
	memcpy(&pr->key, key, sizeof(PgssNgStmtKey));
	pr->nrows = 0;
	resetStringInfo(&pr->texts);
	if (sp->nrows > pr->size)
	{
		pr->size = Max(sp->nrows, 2 * pr->size);
		pr->rows = repalloc(pr->rows, sizeof(PgssNgPlanSnapshot) * pr->size);
		pr->text_off = repalloc(pr->text_off, sizeof(int) * pr->size);
	}
	for (p = sp->rows; DsaPointerIsValid(p) && pr->nrows < pr->size;)
	{
		const PgssNgPlanRow *row = ROW(area, p);
		PgssNgPlanSnapshot *ps = &pr->rows[pr->nrows];

		p = row->next;
		if (row->calls == 0)
			continue;
		ps->key = &pr->key;
		ps->planid = row->planid;
		ps->calls = row->calls;
		ps->total_time = row->total_time;
		ps->min_time = row->min_time;
		ps->max_time = row->max_time;
		ps->rows = row->rows;
		ps->first_call = row->first_call;
		ps->last_call = row->last_call;
		ps->encoding = row->encoding;
		ps->plan = NULL;
		ps->plan_len = 0;
		pr->text_off[pr->nrows] = -1;
		if (pr->showtext && DsaPointerIsValid(row->text))
		{
			int			len;
			const char *data = pgss_ng_plantext_data(area, row->text, &len);

			pr->text_off[pr->nrows] = pr->texts.len;
			ps->plan_len = len;
			appendBinaryStringInfo(&pr->texts, data, len);
		}
		pr->nrows++;
	}
	return pr->nrows > 0;
}

/*
 * read_emit
 *		pgss_ng_kind_foreach emit callback: hand each row copied to the
 *		reader's function (partition lock held shared, no entry lock).
 */
static void
read_emit(void *arg)
{
	PlansRead  *pr = (PlansRead *) arg;
	int			i;

	for (i = 0; i < pr->nrows; i++)
	{
		PgssNgPlanSnapshot *ps = &pr->rows[i];

		if (pr->text_off[i] >= 0)
			ps->plan = pr->texts.data + pr->text_off[i];
		pr->emit(ps, pr->emit_arg);
	}
}

/*
 * pgss_ng_plans_read
 *		Call emit for every plan row with calls, statement by statement
 *		(its text with showtext), after merging this backend's failure
 *		notes, flushing its pending counts (waiting for locks) and making
 *		the rows they wait for.  A snapshot is valid during its emit call
 *		only.  Locks: the statement kind's foreach; emit runs with a
 *		partition lock held shared.  Memory: CurrentMemoryContext.
 */
void
pgss_ng_plans_read(bool showtext, PgssNgPlanEmitFn emit, void *arg)
{
	PlansRead	pr;

	pgss_ng_stmt_merge_errors();
	pgss_ng_kind_flush(pgss_ng_stmt_kind, true);
	pgss_ng_plans_work();

	memset(&pr, 0, sizeof(pr));
	pr.showtext = showtext;
	pr.emit = emit;
	pr.emit_arg = arg;
	pr.size = 8;
	pr.rows = palloc(sizeof(PgssNgPlanSnapshot) * pr.size);
	pr.text_off = palloc(sizeof(int) * pr.size);
	initStringInfo(&pr.texts);
	pgss_ng_kind_foreach(pgss_ng_stmt_kind, read_visit, read_emit, &pr);
	pfree(pr.rows);
	pfree(pr.text_off);
	pfree(pr.texts.data);
}

/*
 * pgss_ng_plans_save
 *		Append a statement's plans to its saved record (format:
 *		stmt_saved.h): PgssNgPlansSaved, then each row's PgssNgPlanRecord
 *		and text.  Entry lock held shared (the writer's foreach).  Memory:
 *		buf's.
 */
void
pgss_ng_plans_save(const PgssNgStmtPlans *sp, StringInfo buf)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	PgssNgPlansSaved head;
	int			headpos = buf->len;
	dsa_pointer p;

	memset(&head, 0, sizeof(head));
	head.seen = sp->seen;
	head.last_change = sp->last_change;
	appendBinaryStringInfo(buf, (const char *) &head, sizeof(head));
	for (p = sp->rows; DsaPointerIsValid(p);)
	{
		const PgssNgPlanRow *row = ROW(area, p);
		PgssNgPlanRecord rec;
		const char *text = NULL;
		int			len = -1;

		p = row->next;
		if (DsaPointerIsValid(row->text))
			text = pgss_ng_plantext_data(area, row->text, &len);
		memset(&rec, 0, sizeof(rec));
		rec.planid = row->planid;
		rec.calls = row->calls;
		rec.total_time = row->total_time;
		rec.min_time = row->min_time;
		rec.max_time = row->max_time;
		rec.rows = row->rows;
		rec.first_call = row->first_call;
		rec.last_call = row->last_call;
		rec.encoding = row->encoding;
		rec.textlen = len;
		rec.have_minmax = row->have_minmax;
		rec.text_tried = row->text_tried;
		appendBinaryStringInfo(buf, (const char *) &rec, sizeof(rec));
		if (text)
			appendBinaryStringInfo(buf, text, len);
		head.nrows++;
	}
	memcpy(buf->data + headpos, &head, sizeof(head));
}

/*
 * next_saved_row
 *		Read the saved plan row at *pos of data (len bytes) into *rec and
 *		point *text at its text (NULL: none); false if it is malformed.
 */
static bool
next_saved_row(const char *data, Size len, Size *pos, PgssNgPlanRecord *rec,
			   const char **text)
{
	if (len - *pos < sizeof(PgssNgPlanRecord))
		return false;
	memcpy(rec, data + *pos, sizeof(PgssNgPlanRecord));
	*pos += sizeof(PgssNgPlanRecord);
	if (rec->textlen < -1 || rec->calls < 0 ||
		(rec->textlen >= 0 && (len - *pos < (Size) rec->textlen ||
							   !PG_VALID_BE_ENCODING(rec->encoding))))
		return false;
	*text = rec->textlen >= 0 ? data + *pos : NULL;
	*pos += Max(rec->textlen, 0);
	return true;
}

/*
 * pgss_ng_plans_saved_valid
 *		Whether data (len bytes, the end of a saved record after its query
 *		text) is a statement's plans, exactly.
 */
bool
pgss_ng_plans_saved_valid(const char *data, Size len)
{
	PgssNgPlansSaved head;
	Size		pos = sizeof(head);
	int			i;

	if (len < sizeof(head))
		return false;
	memcpy(&head, data, sizeof(head));
	if (head.nrows < 0 || head.seen < 0)
		return false;
	for (i = 0; i < head.nrows; i++)
	{
		PgssNgPlanRecord rec;
		const char *text;

		if (!next_saved_row(data, len, &pos, &rec, &text))
			return false;
	}
	return pos == len;
}

/*
 * pgss_ng_plans_restore
 *		Re-create the checked saved plans (data, len) of key's statement,
 *		restored or merged just before: make its rows (a text invalid in its
 *		encoding, or that does not fit, left out), link them (a row of the same
 *		plan made meanwhile takes their counts), add plans_seen and
 *		last_plan_change.  Rows past the backstop or shared memory are not
 *		restored.  In the restore bracket, under its guard.
 */
void
pgss_ng_plans_restore(const PgssNgStmtKey *key, const char *data, Size len)
{
	dsa_area   *area = pgss_ng_kind_area(pgss_ng_stmt_kind);
	PgssNgPlansSaved head;
	LinkRows	la = {0};
	Size		pos = sizeof(head);
	int			i;

	memcpy(&head, data, sizeof(head));
	/* made on plans_unlinked: after an ERROR, the next work frees them */
	Assert(!DsaPointerIsValid(plans_unlinked));
	for (i = 0; i < head.nrows; i++)
	{
		PgssNgPlanRecord rec;
		const char *text;
		PlanWork	w = {0};
		dsa_pointer p;
		PgssNgPlanRow *row;

		if (!next_saved_row(data, len, &pos, &rec, &text))
			break;				/* checked: cannot happen */
		if (text && !pgss_ng_qtext_valid(text, rec.textlen, rec.encoding))
			text = NULL;
		w.counts.planid = rec.planid;
		w.tried = rec.text_tried;
		w.text = unconstify(char *, text);
		w.len = Max(rec.textlen, 0);
		p = plans_make_row(area, &w, rec.first_call);
		if (!DsaPointerIsValid(p))
			break;
		row = ROW(area, p);
		row->calls = rec.calls;
		row->total_time = rec.total_time;
		row->min_time = rec.min_time;
		row->max_time = rec.max_time;
		row->rows = rec.rows;
		row->last_call = rec.last_call;
		row->encoding = rec.encoding;
		row->have_minmax = rec.have_minmax;
		row->next = plans_unlinked;
		plans_unlinked = p;
	}
	la.chain = plans_unlinked;
	la.saved = &head;
	/* with no row left, what was seen still counts */
	if (DsaPointerIsValid(la.chain) || head.seen > 0)
		(void) plans_link_chain(key, &la);
}
