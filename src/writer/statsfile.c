/*-------------------------------------------------------------------------
 *
 * statsfile.c
 *	  The stats file: written by the writer at a clean shutdown (every
 *	  entry's record, most valuable first, the info counters and the
 *	  evicted remainder), read back and checked at its start.  The format
 *	  is stmt_saved.h's; the writer's life is writer.c's.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "miscadmin.h"
#include "pgstat.h"
#include "port/pg_crc32c.h"
#include "storage/fd.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "statsfile.h"
#include "stmt/stmt_saved.h"

#define PGSS_NG_STAT_TMPFILE	PGSS_NG_STAT_FILE ".tmp"

/* the header: magic, version, major, info block size, record size */
#define PGSS_NG_HEADER_WORDS	5

/* One serialized entry, kept apart for sorting by value before writing. */
typedef struct SavedEntry
{
	double		usage;
	char	   *data;			/* palloc'd record */
	int			len;
} SavedEntry;

typedef struct WriteState
{
	SavedEntry *entries;
	int			n;
	int			size;
} WriteState;

/* An open stats file being written, with the CRC of what went in so far. */
typedef struct StatFile
{
	int			fd;
	pg_crc32c	crc;
	bool		failed;
} StatFile;

/*
 * collect_entry
 *		pgss_ng_stmt_save_records callback: copy one entry's record
 *		into its own buffer (so the whole file never has to fit in one
 *		allocation) and remember its usage.  Entry lock held shared.
 *		Memory: the writer's context.
 */
static void
collect_entry(const char *data, Size len, double usage, void *arg)
{
	WriteState *ws = (WriteState *) arg;
	SavedEntry *e;

	if (ws->n == ws->size)
	{
		ws->size *= 2;
		ws->entries = repalloc_huge(ws->entries,
									sizeof(SavedEntry) * ws->size);
	}
	e = &ws->entries[ws->n++];
	e->usage = usage;
	e->data = palloc(len);
	memcpy(e->data, data, len);
	e->len = len;
}

/*
 * saved_entry_cmp
 *		qsort comparator: most valuable (highest usage) entry first.
 */
static int
saved_entry_cmp(const void *a, const void *b)
{
	double		ua = ((const SavedEntry *) a)->usage;
	double		ub = ((const SavedEntry *) b)->usage;

	return ua > ub ? -1 : (ua < ub ? 1 : 0);
}

/*
 * file_write
 *		Write len bytes to the stats file and add them to its CRC; after a
 *		failure, do nothing more (pgss_ng_statsfile_write reports it once).
 */
static void
file_write(StatFile *f, const void *data, Size len)
{
	if (f->failed)
		return;
	COMP_CRC32C(f->crc, data, len);
	errno = 0;
	if (write(f->fd, data, len) != (ssize_t) len)
	{
		if (errno == 0)
			errno = ENOSPC;
		f->failed = true;
	}
}

/*
 * file_write_uint32
 *		file_write() of one uint32, in the machine's byte order.
 */
static void
file_write_uint32(StatFile *f, uint32 v)
{
	file_write(f, &v, sizeof(v));
}

/*
 * remove_if_not_regular
 *		Remove what is at path if it is neither a regular file nor a
 *		directory (a FIFO, a socket, a device, a symbolic link), so that
 *		the stats file can be renamed there: durable_rename() would fail
 *		to fsync it.  Nothing is opened, so nothing blocks.
 */
static void
remove_if_not_regular(const char *path)
{
	struct stat st;

	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode) &&
		!S_ISDIR(st.st_mode))
		(void) unlink(path);
}

/*
 * pgss_ng_statsfile_write
 *		Write every entry, the info counters and the rows of the evicted
 *		remainder to PGSS_NG_STAT_FILE, most valuable entries first:
 *		serialize the entries, sort them, stream them to a new temporary
 *		file with a running CRC-32C, fsync, rename durably over what is
 *		there (removed first if it is not a regular file).  Failures are
 *		logged (LOG) and leave no file behind.
 *		Memory: CurrentMemoryContext (about the size of the file).
 */
void
pgss_ng_statsfile_write(void)
{
	WriteState	ws;
	StatFile	f;
	PgssNgSavedInfo info;
	PgssNgEvictedRow *evicted;
	int			nevicted;
	int			i;

	ws.size = 256;
	ws.n = 0;
	ws.entries = palloc(sizeof(SavedEntry) * ws.size);
	pgss_ng_stmt_save_records(collect_entry, &ws);
	qsort(ws.entries, ws.n, sizeof(SavedEntry), saved_entry_cmp);

	pgss_ng_stmt_save_info(&info);
	evicted = pgss_ng_stmt_save_evicted(&nevicted);

	/*
	 * A new file of our own: whatever was at the temporary name (a FIFO
	 * would block the open) is removed first, and O_EXCL refuses anything
	 * put there meanwhile.
	 */
	(void) unlink(PGSS_NG_STAT_TMPFILE);
	f.fd = OpenTransientFile(PGSS_NG_STAT_TMPFILE,
							 O_WRONLY | O_CREAT | O_EXCL | PG_BINARY);
	if (f.fd < 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not open file \"%s\": %m", PGSS_NG_STAT_TMPFILE)));
		return;
	}
	f.failed = false;
	INIT_CRC32C(f.crc);

	file_write_uint32(&f, PGSS_NG_FILE_MAGIC);
	file_write_uint32(&f, PGSS_NG_FILE_VERSION);
	file_write_uint32(&f, PG_VERSION_NUM / 10000);
	file_write_uint32(&f, sizeof(info));
	file_write_uint32(&f, sizeof(PgssNgStmtRecord));
	file_write(&f, &info, sizeof(info));
	file_write_uint32(&f, ws.n);
	for (i = 0; i < ws.n; i++)
	{
		file_write_uint32(&f, ws.entries[i].len);
		file_write(&f, ws.entries[i].data, ws.entries[i].len);
	}
	file_write_uint32(&f, sizeof(PgssNgEvictedRow));
	file_write_uint32(&f, nevicted);
	file_write(&f, evicted, sizeof(PgssNgEvictedRow) * nevicted);
	FIN_CRC32C(f.crc);
	if (!f.failed)
	{
		pg_crc32c	crc = f.crc;

		errno = 0;
		if (write(f.fd, &crc, sizeof(crc)) != sizeof(crc))
		{
			if (errno == 0)
				errno = ENOSPC;
			f.failed = true;
		}
	}
	if (f.failed || pg_fsync(f.fd) != 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not write file \"%s\": %m", PGSS_NG_STAT_TMPFILE)));
		CloseTransientFile(f.fd);
		unlink(PGSS_NG_STAT_TMPFILE);
		return;
	}
	if (CloseTransientFile(f.fd) != 0)
	{
		ereport(LOG,
				(errcode_for_file_access(),
				 errmsg("could not close file \"%s\": %m", PGSS_NG_STAT_TMPFILE)));
		unlink(PGSS_NG_STAT_TMPFILE);
		return;
	}
	remove_if_not_regular(PGSS_NG_STAT_FILE);
	if (durable_rename(PGSS_NG_STAT_TMPFILE, PGSS_NG_STAT_FILE, LOG) != 0)
		unlink(PGSS_NG_STAT_TMPFILE);
}

/*
 * bad_file
 *		Log the one WARNING for an unusable stats file.
 */
static void
bad_file(const char *reason)
{
	ereport(WARNING,
			(errcode(ERRCODE_DATA_CORRUPTED),
			 errmsg("pgss_ng ignored statistics file \"%s\": %s",
					PGSS_NG_STAT_FILE, reason),
			 errdetail("Statistics start empty.")));
}

/*
 * read_uint32
 *		Read a uint32 at *pos of a buffer of len bytes; false past its end.
 */
static bool
read_uint32(const char *data, Size len, Size *pos, uint32 *v)
{
	if (len - *pos < sizeof(uint32))
		return false;
	memcpy(v, data + *pos, sizeof(uint32));
	*pos += sizeof(uint32);
	return true;
}

/*
 * read_stats_file
 *		Read the whole of PGSS_NG_STAT_FILE (if any) and remove it.  Returns
 *		its bytes and sets *len, or returns NULL: no file, one that could
 *		not be read or is not a regular file (reported by bad_file, without
 *		blocking on a FIFO), or one that could not be removed (WARNING).
 *		Memory: CurrentMemoryContext.
 */
static char *
read_stats_file(Size *len)
{
	struct stat st;
	int			fd;
	char	   *data;

	/* O_NONBLOCK: opening a FIFO must not wait for a writer */
	fd = OpenTransientFile(PGSS_NG_STAT_FILE,
						   O_RDONLY | O_NONBLOCK | PG_BINARY);
	if (fd < 0)
	{
		if (errno != ENOENT)
			bad_file(psprintf("could not open it: %m"));
		return NULL;
	}
	if (fstat(fd, &st) != 0)
	{
		bad_file(psprintf("could not stat it: %m"));
		CloseTransientFile(fd);
		unlink(PGSS_NG_STAT_FILE);
		return NULL;
	}
	if (!S_ISREG(st.st_mode))
	{
		bad_file("it is not a regular file");
		CloseTransientFile(fd);
		remove_if_not_regular(PGSS_NG_STAT_FILE);
		return NULL;
	}
	*len = (Size) st.st_size;
	data = palloc_extended(Max(*len, 1), MCXT_ALLOC_HUGE | MCXT_ALLOC_NO_OOM);
	if (data == NULL || read(fd, data, *len) != (ssize_t) *len)
	{
		bad_file(data == NULL ? "it is too large" : "it could not be read");
		CloseTransientFile(fd);
		unlink(PGSS_NG_STAT_FILE);
		return NULL;
	}
	CloseTransientFile(fd);

	/*
	 * Never load the same file twice: after a crash, start empty.  A file
	 * that cannot be removed would be loaded again at the next start of
	 * this writer (after a crash, or a stray SIGTERM), so it is not loaded
	 * at all.
	 */
	if (unlink(PGSS_NG_STAT_FILE) != 0 && errno != ENOENT)
	{
		ereport(WARNING,
				(errcode_for_file_access(),
				 errmsg("pgss_ng did not load statistics file \"%s\": could not remove it: %m",
						PGSS_NG_STAT_FILE),
				 errdetail("A statistics file is loaded only once removed, so that it is never loaded twice.  Statistics start empty.")));
		return NULL;
	}
	return data;
}

/*
 * check_records
 *		Whether the nrec records from pos on (each a uint32 length and that
 *		many bytes) are each well-formed (pgss_ng_stmt_record_wellformed)
 *		and are followed by the evicted remainder (the size of a row, which
 *		must be this build's, their number and the rows) ending exactly at
 *		len; otherwise reports the problem (bad_file) and returns false.
 *		Sets *evicted_pos to the remainder's first row and *nevicted to
 *		their number.
 */
static bool
check_records(const char *data, Size len, Size pos, uint32 nrec,
			  Size *evicted_pos, uint32 *nevicted)
{
	uint32		i;
	uint32		rowsize;

	for (i = 0; i < nrec; i++)
	{
		uint32		reclen;

		if (!read_uint32(data, len, &pos, &reclen) || len - pos < reclen)
		{
			bad_file("it is truncated");
			return false;
		}
		if (!pgss_ng_stmt_record_wellformed(data + pos, reclen))
		{
			bad_file("malformed entry");
			return false;
		}
		pos += reclen;
	}
	if (!read_uint32(data, len, &pos, &rowsize) ||
		!read_uint32(data, len, &pos, nevicted))
	{
		bad_file("it is truncated");
		return false;
	}
	if (rowsize != sizeof(PgssNgEvictedRow))
	{
		bad_file(psprintf("evicted row size %u, expected %u",
						  rowsize, (uint32) sizeof(PgssNgEvictedRow)));
		return false;
	}
	if ((len - pos) / rowsize < *nevicted)
	{
		bad_file("it is truncated");
		return false;
	}
	*evicted_pos = pos;
	pos += (Size) rowsize * *nevicted;
	if (pos != len)
	{
		bad_file("trailing bytes after the last entry");
		return false;
	}
	return true;
}

/*
 * check_stats_file
 *		Check a stats file read into data: its size, magic number, format
 *		version, PostgreSQL major version, record size, CRC-32C, info block
 *		and the framing and form of every record and the framing of the
 *		evicted remainder.  On success, returns true with *len cut to
 *		exclude the CRC, *pos at the first record, the info block in *info,
 *		the number of records in *nrec, and the remainder's rows at
 *		*evicted_pos (*nevicted of them); otherwise reports the problem
 *		(bad_file) and returns false.
 */
static bool
check_stats_file(const char *data, Size *len, Size *pos,
				 PgssNgSavedInfo *info, uint32 *nrec,
				 Size *evicted_pos, uint32 *nevicted)
{
	uint32		magic = 0,
				version = 0,
				major = 0,
				infolen = 0,
				recsize = 0;
	pg_crc32c	crc,
				filecrc;

	if (*len < (PGSS_NG_HEADER_WORDS + 1) * sizeof(uint32) +
		sizeof(pg_crc32c))
	{
		bad_file(*len == 0 ? "it is empty" : "it is truncated");
		return false;
	}
	memcpy(&filecrc, data + *len - sizeof(pg_crc32c), sizeof(pg_crc32c));
	*len -= sizeof(pg_crc32c);

	read_uint32(data, *len, pos, &magic);
	read_uint32(data, *len, pos, &version);
	read_uint32(data, *len, pos, &major);
	read_uint32(data, *len, pos, &infolen);
	read_uint32(data, *len, pos, &recsize);
	if (magic != PGSS_NG_FILE_MAGIC)
	{
		bad_file("wrong magic number");
		return false;
	}
	if (version != PGSS_NG_FILE_VERSION)
	{
		bad_file(psprintf("format version %u, expected %u",
						  version, PGSS_NG_FILE_VERSION));
		return false;
	}
	if (major != PG_VERSION_NUM / 10000)
	{
		bad_file(psprintf("written by PostgreSQL %u, this is %d",
						  major, PG_VERSION_NUM / 10000));
		return false;
	}
	/* the same version with another layout: a build that forgot a bump */
	if (recsize != sizeof(PgssNgStmtRecord))
	{
		bad_file(psprintf("entry record size %u, expected %u",
						  recsize, (uint32) sizeof(PgssNgStmtRecord)));
		return false;
	}
	INIT_CRC32C(crc);
	COMP_CRC32C(crc, data, *len);
	FIN_CRC32C(crc);
	if (!EQ_CRC32C(crc, filecrc))
	{
		bad_file("checksum mismatch");
		return false;
	}
	if (infolen != sizeof(*info) || *len - *pos < sizeof(*info))
	{
		bad_file("bad info block");
		return false;
	}
	memcpy(info, data + *pos, sizeof(*info));
	*pos += sizeof(*info);
	if (!read_uint32(data, *len, pos, nrec))
	{
		bad_file("it is truncated");
		return false;
	}

	/* check every record before creating anything */
	return check_records(data, *len, *pos, *nrec, evicted_pos, nevicted);
}

/*
 * pgss_ng_statsfile_load
 *		Read PGSS_NG_STAT_FILE, remove it and re-create what it holds: the
 *		info counters and remainder rows, then the entries, most valuable
 *		first; a bad file is reported (bad_file) and ignored whole; records
 *		past pgss_ng.max go to the evicted remainder; the restore stops
 *		when shared memory runs out or at a full reset; one line says what
 *		was restored; between_records runs between two (a reload).
 *		docs/design.md, "Persistence".  Memory: CurrentMemoryContext.
 *		Errors: none of its own (a bad file is a WARNING).
 */
void
pgss_ng_statsfile_load(void (*between_records) (void))
{
	char	   *data;
	Size		len = 0;
	Size		pos = 0;
	uint32		nrec,
				i;
	PgssNgSavedInfo info;
	PgssNgRestore rs;
	Size		evicted_pos = 0;
	uint32		nevicted = 0;
	bool		oom = false;

	data = read_stats_file(&len);
	if (data == NULL)
		return;
	if (!check_stats_file(data, &len, &pos, &info, &nrec, &evicted_pos,
						  &nevicted))
		return;

	pgss_ng_stmt_restore_start(&rs);
	pgss_ng_stmt_restore_info(&rs, &info,
							  data + evicted_pos,
							  nevicted);
	for (i = 0; i < nrec && !rs.reset &&
		 rs.restored + rs.skipped < (Size) pgss_ng_stmt_restore_max();
		 i++)
	{
		uint32		reclen = 0;
		Size		skipped = rs.skipped;

		between_records();
		(void) read_uint32(data, len, &pos, &reclen);	/* checked */
		pgss_ng_stmt_restore_record(&rs, data + pos, reclen);
		pos += reclen;
		if (rs.skipped > skipped && pgss_ng_stmt_restore_backing_off())
		{
			/* shared memory ran out: stop at the first time (one line) */
			oom = true;
			break;
		}
	}

	/* past pgss_ng.max: not lost, evicted at once into the remainder */
	for (; !oom && !rs.reset && i < nrec; i++)
	{
		uint32		reclen = 0;

		(void) read_uint32(data, len, &pos, &reclen);	/* checked */
		pgss_ng_stmt_fold_record(&rs, data + pos, reclen);
		pos += reclen;
	}

	if (rs.reset)
		ereport(LOG,
				(errmsg("pgss_ng restored no statement entries from \"%s\": all statistics were reset during the restore",
						PGSS_NG_STAT_FILE),
				 errdetail("The reset removed the %zu entries restored before it; the other %zu saved entries, older than the reset too, were not restored.",
						   rs.restored, (Size) nrec - rs.restored)));
	else if (oom || rs.skipped > 0)
		ereport(LOG,
				(errmsg("pgss_ng restored %zu statement entries from \"%s\" (%zu of them without their query text); %zu more could not be restored",
						rs.restored, PGSS_NG_STAT_FILE, rs.texts_dropped,
						oom ? Min((Size) nrec,
								  (Size) pgss_ng_stmt_restore_max()) -
						rs.restored : rs.skipped),
				 oom ?
				 errdetail("Shared memory ran out; the restore stopped there.") :
				 errdetail("A backend had already made the same entry, shared memory ran out, or a saved query text was not valid in its encoding.")));
	else if (rs.reset_away > 0)
		ereport(LOG,
				(rs.texts_dropped > 0 ?
				 errmsg("pgss_ng restored %zu statement entries from \"%s\" (%zu of them without their query text)",
						rs.restored, PGSS_NG_STAT_FILE, rs.texts_dropped) :
				 errmsg("pgss_ng restored %zu statement entries from \"%s\"",
						rs.restored, PGSS_NG_STAT_FILE),
				 errdetail("A reset made since the server started removed the statements of %zu more saved entries: they were not restored.",
						   rs.reset_away)));
	else if (rs.texts_dropped > 0)
		ereport(LOG,
				(errmsg("pgss_ng restored %zu statement entries from \"%s\" (%zu of them without their query text)",
						rs.restored, PGSS_NG_STAT_FILE, rs.texts_dropped),
				 errdetail("Their saved query texts did not fit in pgss_ng.query_text_memory; qtext_dropped counts them.")));
	else
		ereport(LOG,
				(errmsg("pgss_ng restored %zu statement entries from \"%s\"",
						rs.restored, PGSS_NG_STAT_FILE)));
}
