#!/usr/bin/env bash
# Check META.json, the PGXN distribution metadata (run by scripts/test.sh):
#  1. pgxn_meta, PGXN's validator (built by scripts/install-pgxn-meta.sh
#     into $PGSS_NG_TOOLS_DIR), accepts it against the PGXN Meta Spec;
#  2. it agrees with the tree: "provides" names exactly the extensions of
#     the *.control files, each at its default_version (1.1 is 1.1.0) with
#     a "file" that exists; the distribution's version is pgss_ng's and
#     debian/changelog's upstream version; PostgreSQL's lowest version is
#     scripts/pg-versions.sh's lowest.
# Prints "ok N - ..." / "not ok N - ..." lines; exits 1 on a failure.
set -euo pipefail
cd "$(dirname "$0")/.."

TOOLS=${PGSS_NG_TOOLS_DIR:-/opt/pgss_ng/tools}
validator=$(ls -d "$TOOLS"/pgxn_meta-*/bin/pgxn_meta 2>/dev/null | sort -V | tail -n 1 || true)
rc=0
if [ -z "$validator" ]; then
    echo "not ok 1 - pgxn_meta validates META.json"
    echo "# no $TOOLS/pgxn_meta-*/bin/pgxn_meta: scripts/install-pgxn-meta.sh builds it"
    rc=1
elif out=$("$validator" META.json 2>&1); then
    echo "ok 1 - pgxn_meta validates META.json ($("$validator" --version | awk '{print $NF}'))"
else
    echo "not ok 1 - pgxn_meta validates META.json"
    printf '%s\n' "$out" | sed 's/\\n/\n/g' | sed 's/^/# /'
    rc=1
fi

. scripts/pg-versions.sh
upstream=$(dpkg-parsechangelog -l debian/changelog -S Version 2>/dev/null || true)
upstream=${upstream%-*}
PGSS_NG_LOWEST=$(echo "$PGSS_NG_ALL_VERSIONS" | tr ' ' '\n' | sort -n | head -n 1) \
PGSS_NG_UPSTREAM=$upstream perl -MJSON::PP -e '
    use strict;
    use warnings;
    my $n = 1;
    my $failed = 0;
    sub check
    {
        my ($ok, $what, @why) = @_;
        $n++;
        print(($ok ? "ok" : "not ok") . " $n - $what\n");
        print "# $_\n" for $ok ? () : @why;
        $failed++ unless $ok;
    }
    # "1.1" -> "1.1.0": a control file version as PGXN'"'"'s semantic version
    sub semver
    {
        my @p = split /\./, shift;
        push @p, 0 while @p < 3;
        return join ".", @p;
    }
    open my $fh, "<", "META.json" or die "META.json: $!";
    my $meta = eval { JSON::PP->new->decode(do { local $/; <$fh> }) };
    check(defined $meta, "META.json is JSON", $@);
    exit 1 unless $meta;

    my %control;
    for my $f (glob "*.control")
    {
        open my $c, "<", $f or die "$f: $!";
        my ($v) = map { /^\s*default_version\s*=\s*\x27([^\x27]*)\x27/ ? $1 : () } <$c>;
        $control{ $f =~ s/\.control$//r } = $v;
    }
    my $provides = $meta->{provides} // {};
    check(join(" ", sort keys %$provides) eq join(" ", sort keys %control),
        "META.json provides the extensions of the *.control files",
        "provides: " . join(" ", sort keys %$provides),
        "control files: " . join(" ", sort keys %control));
    for my $ext (sort keys %control)
    {
        my $p = $provides->{$ext} or next;
        check(($p->{version} // "") eq semver($control{$ext}),
            "$ext: META.json version is default_version $control{$ext}",
            "META.json: " . ($p->{version} // "none"));
        check(defined $p->{file} && -f $p->{file},
            "$ext: its file exists", "file: " . ($p->{file} // "none"));
    }
    check($meta->{version} eq semver($control{pgss_ng} // ""),
        "the distribution version is pgss_ng'"'"'s",
        "META.json: $meta->{version}, pgss_ng.control: " . ($control{pgss_ng} // "none"));
    check($meta->{version} eq $ENV{PGSS_NG_UPSTREAM},
        "the distribution version is debian/changelog'"'"'s upstream version",
        "META.json: $meta->{version}, debian/changelog: $ENV{PGSS_NG_UPSTREAM}");
    my $pg = semver($ENV{PGSS_NG_LOWEST});
    for my $phase (qw(configure runtime))
    {
        my $req = $meta->{prereqs}{$phase}{requires}{PostgreSQL} // "";
        check($req eq $pg, "$phase requires PostgreSQL $pg", "META.json: $req");
    }
    exit($failed ? 1 : 0);
' || rc=1
exit "$rc"
