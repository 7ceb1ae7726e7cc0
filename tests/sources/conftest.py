"""A real PostgreSQL server and a local S3 server for the source tests, started and stopped by the tests themselves.

pgserver (a dev dependency) bundles PostgreSQL's binaries: nothing comes from apt. The server
listens on a Unix socket only; a role with a password and password authentication on that
socket stand in for a remote database's login.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
import pytest

SECRET = "Tr0ub4dor-s3cret-9q7"
"""The analyst role's password: a test greps every file a job writes for it."""


@dataclass(frozen=True)
class Postgres:
    """A running server: its socket folder, a database, and a role ``analyst`` whose login needs :data:`SECRET`."""

    socket: str
    database: str
    superuser_uri: str

    def url(self, password: str | None = SECRET) -> str:
        login = f"analyst:{password}" if password is not None else "analyst"
        return f"postgresql://{login}@/{self.database}?host={self.socket}"

    def load(self, frame: pd.DataFrame, table: str) -> None:
        """Replace ``table`` with ``frame``'s rows, as the superuser (the analyst only reads)."""
        import sqlalchemy as sa

        engine = sa.create_engine(self.superuser_uri.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with engine.begin() as conn:
                frame.to_sql(table, conn, index=False, if_exists="replace")
                conn.exec_driver_sql(f'GRANT SELECT ON "{table}" TO analyst')
        finally:
            engine.dispose()


@pytest.fixture(scope="session")
def postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Postgres]:
    pgserver = pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    folder = tmp_path_factory.mktemp("pgdata")
    server = pgserver.get_server(folder, cleanup_mode="stop")
    try:
        server.psql("CREATE DATABASE shop;")
        server.psql(f"CREATE ROLE analyst LOGIN PASSWORD '{SECRET}';")
        hba = Path(folder) / "pg_hba.conf"  # the analyst's login over the socket needs its password
        hba.write_text("local all analyst scram-sha-256\n" + hba.read_text())
        server.psql("SELECT pg_reload_conf();")
        uri = server.get_uri("shop")
        socket = uri.split("host=", 1)[1]
        yield Postgres(socket=socket, database="shop", superuser_uri=uri)
    finally:
        server.cleanup()


KEY = "s3-Secret-Key-6ZqW"
"""The S3 secret access key: a test greps every file a job writes for it."""


@pytest.fixture
def s3(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A bucket ``exports`` on a local S3 server; credentials and endpoint in the environment, as a user has them."""
    pytest.importorskip("s3fs")
    server_mod = pytest.importorskip("moto.server")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # the server's request log, in this process
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0)
    server.start()
    host, port = server.get_host_and_port()
    for name, value in {
        "AWS_ACCESS_KEY_ID": "AKIAWHYFLOWTEST",
        "AWS_SECRET_ACCESS_KEY": KEY,
        "AWS_ENDPOINT_URL": f"http://{host}:{port}",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    import boto3
    import fsspec

    boto3.client("s3").create_bucket(Bucket="exports")
    fsspec.get_filesystem_class("s3").clear_instance_cache()  # each test's server is new
    try:
        yield "exports"
    finally:
        server.stop()
