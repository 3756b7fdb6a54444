"""The few lines a Ray job runs first, on the node: write the launcher's files into the
run's folder (``FTSPEC_RUN_DIR``) from ``FTSPEC_FILES`` (base64 JSON, see ``ray_payload``).

A script, not a module of ours that the node imports: a one-node Ray job runs it with
``python -c`` where ftspec need not be installed. The multi-node driver runs the same text.

The folder's path is known in advance (``/tmp/ftspec/<submission id>``: the command line
names the files by absolute path), so the script trusts neither it nor its parent: each must
be a real folder (not a link) of the user running the job that nobody else may write to, and
each file is opened without following a link, private to the user. Someone who made
``/tmp/ftspec`` first, or planted a link there, gets a refused run, never a file of the
user's overwritten.
"""

UNPACK = """\
import base64, json, os, stat, sys
d = os.environ["FTSPEC_RUN_DIR"]
for p in (os.path.dirname(d), d):
    os.makedirs(p, mode=0o700, exist_ok=True)
    s = os.lstat(p)
    if not stat.S_ISDIR(s.st_mode) or s.st_uid != os.getuid() or s.st_mode & 0o022:
        sys.exit("ftspec: " + p + " is not a private folder of this user: refusing to write"
                 " the run's files there")
for n, t in json.loads(base64.b64decode(os.environ["FTSPEC_FILES"])).items():
    if os.path.basename(n) != n or n in ("", ".", ".."):
        sys.exit("ftspec: refusing the run file name " + repr(n))
    f = os.open(os.path.join(d, n), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW,
                0o600)
    with os.fdopen(f, "w", encoding="utf-8") as out:
        out.write(t)
"""
