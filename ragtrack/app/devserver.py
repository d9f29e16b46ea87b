"""A disposable team tracking stack on 127.0.0.1: PostgreSQL, an S3 stand-in and `mlflow server`.

The stack a team shares, started on one machine for tests and trials: PostgreSQL (the
image's `initdb`/`pg_ctl`) as MLflow's backend store, moto's standalone S3 server as the
artifact store, and `mlflow server --artifacts-destination s3://… --serve-artifacts`
(optionally with `--app-name basic-auth`). Clients then need only the server's URL.
`python -m ragtrack.app.devserver` (`make server`) starts it and stops it on Ctrl-C; the tests
use the classes (tests/server/conftest.py). Nothing in ragtrack's core imports this module;
it needs the `server` extra (psycopg, moto[server], boto3).

Every component that cannot start raises `ComponentError`, naming the component and why
(the last lines of its log). Everything lives in temporary directories removed at `stop`.

Each component runs in a process group of its own (PostgreSQL's `pg_ctl` puts the server
in a new session itself), out of reach of a signal to the owner's group: so each gets a
guard, a small process of its own that ends the group, and removes the component's temporary
directory, within a second of the owner's death, also when the owner was SIGKILLed
(`timeout -k`, a cancelled CI job). A guard whose group has gone exits too.
"""

from __future__ import annotations

import argparse
import os
import pwd
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

__all__ = ["AWS_ENV", "ComponentError", "MotoS3", "Postgres", "TrackingServer", "free_port", "main"]

HOST = "127.0.0.1"
PG_USER = "mlflow"  # the database role the stack creates (password authentication, 127.0.0.1 only)
# Any values do for the S3 stand-in; a real S3/MinIO takes the team's credentials here.
AWS_ENV = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
BIN = Path(sys.executable).parent
LOG_LINES = 6  # lines of a component's log quoted when it fails to start
GUARD_INTERVAL_S = 0.5  # how often a guard looks whether its owner is alive
GUARD_GRACE_S = 5.0  # what an orphaned component gets after SIGTERM, before SIGKILL


class ComponentError(RuntimeError):
    """A component of the stack did not start: `component` names it, the message says why."""

    def __init__(self, component: str, why: str) -> None:
        self.component = component
        self.why = why
        super().__init__(f"{component} did not start: {why}")

    def __reduce__(self) -> tuple:
        return (type(self), (self.component, self.why))


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def _tail(log: Path) -> str:
    try:
        lines = [
            line for line in log.read_text(encoding="utf-8", errors="replace").splitlines() if line.strip()
        ]
    except OSError:
        return "(no log)"
    return " | ".join(lines[-LOG_LINES:]) or "(empty log)"


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without the caller's MLflow settings (a test's MLFLOW_TRACKING_URI is not the
    server's)."""
    env = {
        k: v for k in list(os.environ) if not k.startswith("MLFLOW_") and (v := os.environ.get(k)) is not None
    }
    env.update(extra)
    return env


def _spawn(cmd: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """A process in its own group (so stopping it stops its workers too), output to `log`, guarded (see
    `guard`)."""
    with log.open("ab") as out:
        proc = subprocess.Popen(
            cmd,
            stdout=out,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=env,
            start_new_session=True,
        )
    guard(proc.pid)
    return proc


def guard(pgid: int, *dirs: Path) -> subprocess.Popen[bytes]:
    """Start a process that ends group `pgid` and removes `dirs` once this process is gone, however it
    went."""
    import psutil

    owner = psutil.Process()
    cmd = [
        sys.executable,
        "-m",
        "ragtrack.app.devserver",
        "--guard",
        str(owner.pid),
        repr(owner.create_time()),
        str(pgid),
        *map(str, dirs),
    ]
    return subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        close_fds=True,
    )


def _guard_loop(
    owner: int, created: float, pgid: int, dirs: list[str], interval: float = GUARD_INTERVAL_S
) -> None:
    import psutil

    def alive() -> bool:
        try:
            return psutil.Process(owner).create_time() == created  # a reused pid has another start time
        except psutil.NoSuchProcess:
            return False

    def group_left() -> bool:
        try:
            os.killpg(pgid, 0)
            return True
        except ProcessLookupError:
            return False
        except PermissionError:  # the group runs as another user (PostgreSQL); we are root or its owner
            return True

    while group_left():
        if not alive():
            for sig, wait in ((signal.SIGTERM, GUARD_GRACE_S), (signal.SIGKILL, 5.0)):
                try:
                    os.killpg(pgid, sig)
                except ProcessLookupError:
                    break
                deadline = time.monotonic() + wait
                while group_left() and time.monotonic() < deadline:
                    time.sleep(0.1)
            for d in dirs:
                shutil.rmtree(d, ignore_errors=True)
            return
        time.sleep(interval)


def _stop(proc: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    """SIGTERM the process group, then SIGKILL what is left after `timeout` seconds."""
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=timeout)
    except ProcessLookupError:
        pass


def _wait_http(url: str, proc: subprocess.Popen[bytes], component: str, log: Path, timeout: float) -> None:
    """Until `url` answers (any HTTP status); a process that exits or a timeout is a `ComponentError`."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            pass
        if proc.poll() is not None:
            raise ComponentError(component, f"exited with code {proc.returncode}: {_tail(log)}")
        if time.monotonic() > deadline:
            raise ComponentError(component, f"no answer on {url} after {timeout:.0f} s: {_tail(log)}")
        time.sleep(0.3)


class Postgres:
    """A PostgreSQL cluster in a temporary directory, listening on 127.0.0.1 only, with password
    authentication.

    `initdb` and `pg_ctl` refuse to run as root: then they run as the `postgres` user, in a
    directory of its own under the system temp dir (pytest's tmp dirs are private to root).
    Every connection, local socket included, needs the role's password (scram-sha-256; no
    `trust`). The password is made at random and kept only in a libpq password file (mode
    0600) that the URIs name (`?passfile=…`): it appears in no command line, URI or log.
    """

    component = "PostgreSQL"

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        self.dir: Path | None = None
        self.secrets: Path | None = None  # holds `pgpass`, the clients' password file

    def _as_owner(self) -> list[str]:
        return ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []

    def _run(self, *args: str) -> None:
        cmd = [*self._as_owner(), *args]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as e:
            raise ComponentError(self.component, f"{args[0]}: {e}") from None
        if proc.returncode != 0:
            why = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-LOG_LINES:])
            raise ComponentError(self.component, f"{args[0]} {args[-1]} failed: {why or proc.returncode}")

    @property
    def log(self) -> Path:
        assert self.dir is not None
        return self.dir / "postgres.log"

    def start(self) -> None:
        for tool in ("initdb", "pg_ctl"):
            if shutil.which(tool) is None:
                raise ComponentError(
                    self.component, f"`{tool}` not found on PATH (install PostgreSQL's server binaries)"
                )
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise ComponentError(
                    self.component, "running as root and there is no `postgres` user to run initdb as"
                ) from None
        self.dir = Path(tempfile.mkdtemp(prefix="ragtrack-pg-"))
        if os.geteuid() == 0:
            os.chown(self.dir, owner.pw_uid, owner.pw_gid)
        data = self.dir / "data"
        password = secrets.token_urlsafe(24)
        pwfile = self.dir / "initdb-password"
        pwfile.write_text(password + "\n", encoding="utf-8")
        pwfile.chmod(0o600)
        if os.geteuid() == 0:
            os.chown(pwfile, owner.pw_uid, owner.pw_gid)
        try:
            self._run(
                "initdb",
                "-D",
                str(data),
                "-A",
                "scram-sha-256",
                "-U",
                PG_USER,
                f"--pwfile={pwfile}",
                "--no-sync",
                "-E",
                "UTF8",
            )
        finally:
            pwfile.unlink(missing_ok=True)
        self.secrets = Path(tempfile.mkdtemp(prefix="ragtrack-pgpass-"))  # 0700, the caller's
        (self.secrets / "pgpass").touch(mode=0o600)
        (self.secrets / "pgpass").write_text(f"{HOST}:{self.port}:*:{PG_USER}:{password}\n", encoding="utf-8")
        self.resume()

    def resume(self) -> None:
        """Start the (initialised) server; also after `pause` (a running server is left alone)."""
        assert self.dir is not None
        if (self.dir / "data" / "postmaster.pid").exists():
            return
        options = f"-p {self.port} -k {self.dir} -c listen_addresses={HOST} -c fsync=off"
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-o", options, "-l", str(self.log), "-w", "start")
        postmaster = int((self.dir / "data" / "postmaster.pid").read_text().split()[0])
        guard(
            os.getpgid(postmaster), self.dir, *([self.secrets] if self.secrets else [])
        )  # pg_ctl gave it its own session

    def pause(self) -> None:
        """Stop the server, keeping its data: clients now get 'connection refused'."""
        if self.dir is not None and (self.dir / "data" / "postmaster.pid").exists():
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "fast", "-w", "stop")

    def create_database(self, name: str) -> str:
        """Create database `name`; returns its SQLAlchemy URI (psycopg 3 driver)."""
        try:
            import psycopg
        except ImportError:
            raise ComponentError(
                self.component, "the `psycopg` driver is not installed (pip install 'ragtrack[server]')"
            ) from None
        try:
            with psycopg.connect(
                host=HOST,
                port=self.port,
                user=PG_USER,
                dbname="postgres",
                passfile=str(self.passfile),
                autocommit=True,
            ) as con:
                con.execute(f'CREATE DATABASE "{name}"')
        except psycopg.Error as e:
            raise ComponentError(self.component, f"CREATE DATABASE {name}: {e}") from None
        return self.uri(name)

    @property
    def passfile(self) -> Path:
        assert self.secrets is not None, "start() first"
        return self.secrets / "pgpass"

    def uri(self, database: str) -> str:
        """The SQLAlchemy URI of `database`: the role, and the password file to read its password from."""
        return f"postgresql+psycopg://{PG_USER}@{HOST}:{self.port}/{database}?passfile={self.passfile}"

    def stop(self) -> None:
        if self.dir is None:
            return
        try:
            self.pause()
        except ComponentError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
        self.dir = None
        if self.secrets is not None:
            shutil.rmtree(self.secrets, ignore_errors=True)
            self.secrets = None


class MotoS3:
    """moto's standalone S3 server (the stand-in for S3 or MinIO); state lives in its memory."""

    component = "S3 stand-in (moto)"

    def __init__(self, root: Path, port: int | None = None) -> None:
        self.root = root
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self, timeout: float = 60) -> None:
        try:
            import moto.server  # noqa: F401
        except ImportError:
            raise ComponentError(
                self.component, "`moto[server]` is not installed (pip install 'ragtrack[server]')"
            ) from None
        log = self.root / "moto.log"
        self.proc = _spawn(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)], log, _clean_env()
        )
        _wait_http(f"{self.endpoint}/moto-api/", self.proc, self.component, log, timeout)

    def client(self):  # noqa: ANN201 - boto3's client type is generated at run time
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=AWS_ENV["AWS_DEFAULT_REGION"],
            aws_access_key_id=AWS_ENV["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=AWS_ENV["AWS_SECRET_ACCESS_KEY"],
        )

    def create_bucket(self, name: str) -> None:
        try:
            self.client().create_bucket(Bucket=name)
        except Exception as e:  # botocore's errors (ImportError included) are one line for the skip reason
            raise ComponentError(self.component, f"create bucket {name}: {type(e).__name__}: {e}") from None

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every object key in `bucket` under `prefix`."""
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix)
        return [o["Key"] for page in pages for o in page.get("Contents", [])]

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None


class TrackingServer:
    """`mlflow server` over a PostgreSQL database, serving artifacts from an S3 destination.

    With `auth=(username, password)` it runs MLflow's `basic-auth` app, whose admin user is
    created with those credentials (its user store is a SQLite file in `root`).
    """

    def __init__(
        self,
        root: Path,
        backend_uri: str,
        artifacts: str,
        s3_endpoint: str,
        *,
        auth: tuple[str, str] | None = None,
        port: int | None = None,
        workers: int = 2,
    ) -> None:
        self.root, self.backend_uri, self.artifacts, self.s3_endpoint = (
            root,
            backend_uri,
            artifacts,
            s3_endpoint,
        )
        self.auth, self.workers = auth, workers
        self.port = port or free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.component = "mlflow server" + (" (basic-auth)" if auth else "")
        self.log = root / f"mlflow-server-{self.port}.log"

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def _env(self) -> dict[str, str]:
        # No job executor: it serves MLflow's GenAI jobs (online scoring), which ragtrack does not use.
        env = _clean_env(
            **AWS_ENV, MLFLOW_S3_ENDPOINT_URL=self.s3_endpoint, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false"
        )
        if self.auth:
            config = self.root / f"basic_auth-{self.port}.ini"
            config.write_text(
                "[mlflow]\ndefault_permission = READ\n"
                f"database_uri = sqlite:///{self.root / f'basic_auth-{self.port}.db'}\n"
                "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n",
                encoding="utf-8",
            )
            env.update(
                MLFLOW_AUTH_CONFIG_PATH=str(config),
                MLFLOW_AUTH_ADMIN_USERNAME=self.auth[0],
                MLFLOW_AUTH_ADMIN_PASSWORD=self.auth[1],
                MLFLOW_FLASK_SERVER_SECRET_KEY=secrets.token_hex(16),
            )
        return env

    def launch(self) -> None:
        """Start the server without waiting for it (several can start side by side); see `wait_ready`."""
        cmd = [
            str(BIN / "mlflow"),
            "server",
            "--host",
            HOST,
            "--port",
            str(self.port),
            "--workers",
            str(self.workers),
            "--backend-store-uri",
            self.backend_uri,
            "--artifacts-destination",
            self.artifacts,
            "--serve-artifacts",
        ]
        if self.auth:
            cmd += ["--app-name", "basic-auth"]
        self.proc = _spawn(cmd, self.log, self._env())

    def wait_ready(self, timeout: float = 180) -> None:
        assert self.proc is not None, "launch() first"
        _wait_http(f"{self.url}/health", self.proc, self.component, self.log, timeout)

    def start(self) -> None:
        self.launch()
        self.wait_ready()

    def stop(self) -> None:
        _stop(self.proc)
        self.proc = None


def main(argv: list[str] | None = None) -> int:
    """`make server`: the stack in the foreground until Ctrl-C; every trace of it is removed then."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--guard"]:  # see `guard`
        _guard_loop(int(argv[1]), float(argv[2]), int(argv[3]), argv[4:])
        return 0
    p = argparse.ArgumentParser(prog="python -m ragtrack.app.devserver", description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=5000, help="the tracking server's port (default 5000)")
    p.add_argument(
        "--auth",
        action="store_true",
        help="basic-auth app; admin = $MLFLOW_TRACKING_USERNAME (default admin) / $MLFLOW_TRACKING_PASSWORD",
    )
    p.add_argument("--bucket", default="ragtrack", help="the S3 bucket for artifacts (default ragtrack)")
    args = p.parse_args(argv)
    auth = None
    if args.auth:
        password = os.environ.get("MLFLOW_TRACKING_PASSWORD")
        if not password:
            print(
                "error: --auth needs MLFLOW_TRACKING_PASSWORD in the environment (the admin password)",
                file=sys.stderr,
            )
            return 2
        auth = (os.environ.get("MLFLOW_TRACKING_USERNAME") or "admin", password)
    from ragtrack.core.termination import Terminated, exit_code, handle_termination

    root = Path(tempfile.mkdtemp(prefix="ragtrack-server-"))
    pg, s3 = Postgres(), MotoS3(root)
    server: TrackingServer | None = None
    try:
        with handle_termination():  # Ctrl-C, SIGTERM, SIGHUP: stop everything below
            pg.start()
            s3.start()
            s3.create_bucket(args.bucket)
            server = TrackingServer(
                root,
                pg.create_database("mlflow"),
                f"s3://{args.bucket}/artifacts",
                s3.endpoint,
                auth=auth,
                port=args.port,
            )
            server.start()
            assert server.proc is not None  # start() launched it
            guard(server.proc.pid, root)  # a SIGKILLed `make server` leaves no folder behind either
            print(
                f"PostgreSQL  {pg.uri('mlflow')}\nS3 (moto)   {s3.endpoint}  bucket {args.bucket}\n"
                f"MLflow      {server.url}{'  (basic-auth, admin ' + auth[0] + ')' if auth else ''}\n\n"
                f"export MLFLOW_TRACKING_URI={server.url}\n\n"
                f"Ctrl-C stops everything and deletes its data ({root}).",
                flush=True,
            )
            while server.proc is not None and server.proc.poll() is None:
                time.sleep(1)
            print(f"error: mlflow server exited: {_tail(server.log)}", file=sys.stderr)
            return 1
    except ComponentError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, Terminated) as e:
        return 0 if isinstance(e, KeyboardInterrupt) else exit_code(e)
    finally:
        if server is not None:
            server.stop()
        s3.stop()
        pg.stop()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
