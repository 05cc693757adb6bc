"""The lab's database bootstrap: a Lambda function in the VPC's private subnets, invoked by
Terraform (aws_lambda_invocation, bootstrap.tf) once the RDS instance is up, and again when a
role's password changes.

It is the only reader of the RDS master secret. With it, it gives each role of the event its
own database: the role (created, or its password reset) owns that database, and PUBLIC loses
CONNECT on it, so the targets' role `showdown` cannot reach the runs' store and the store's role
`runs` cannot reach the targets' database. The passwords come from the roles' own secrets and
reach PostgreSQL as SCRAM verifiers (made by scramp), never in clear: the RDS log of DDL
statements holds no password.

The PostgreSQL client is pg8000 (with scramp for SCRAM), from the function's layer: the versions
pinned by hash in requirements.txt beside this file. It speaks TLS only, verified against the RDS
CA bundle packaged beside this file, host name included.
"""

import base64
import contextlib
import json
import os
import ssl

import pg8000.native
from pg8000.native import identifier, literal
from scramp import ScramMechanism

CA_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "rds-ca.pem")


class BootstrapError(Exception):
    """What stopped the bootstrap, in one line: the step, then the server's message and SQLSTATE
    (or the client's error). Never a password: the steps name roles and databases only."""


def describe(error):
    """pg8000's error in one line: a DatabaseError carries the server's ErrorResponse fields."""
    detail = error.args[0] if error.args else None
    if isinstance(detail, dict):
        return f"{detail.get('M', 'error')} (SQLSTATE {detail.get('C', '?')})"
    return str(error) or type(error).__name__


@contextlib.contextmanager
def step(what):
    """Turns a failure within into a BootstrapError that says what was being done."""
    try:
        yield
    except (pg8000.native.Error, OSError) as e:  # OSError: the network, TLS (ssl.SSLError)
        raise BootstrapError(f"{what}: {describe(e)}") from e


def connect(host, port, user, password, database, cafile=CA_FILE, timeout=30):
    """A session as `user` on `database`, over TLS verified against `cafile`: the server's
    certificate must chain to it and name `host`. pg8000 refuses a server that refuses TLS."""
    context = ssl.create_default_context(cafile=cafile)
    return pg8000.native.Connection(
        user, host=host, port=port, password=password, database=database, ssl_context=context, timeout=timeout
    )


def scram_verifier(password):
    """What PostgreSQL stores for a SCRAM-SHA-256 password (its `rolpassword`), given to it
    instead of the password."""
    salt, stored_key, server_key, iterations = ScramMechanism("SCRAM-SHA-256").make_auth_info(password)
    salt, stored_key, server_key = (base64.b64encode(b).decode() for b in (salt, stored_key, server_key))
    return f"SCRAM-SHA-256${iterations}:{salt}${stored_key}:{server_key}"


def bootstrap(conn, admin, admin_database, roles):
    """Gives each role {username, password, dbname} its own database, idempotently; returns what
    it did, without a password."""
    done = []
    for role in roles:
        user, database = role["username"], role["dbname"]
        with step(f"making the role {user}"):
            exists = conn.run("SELECT 1 FROM pg_roles WHERE rolname = :user", user=user)
            verb = "ALTER" if exists else "CREATE"
            # LOGIN only: a role made here is no superuser, cannot create roles or databases.
            # DDL takes no bind parameters: the verifier goes in as a quoted literal.
            conn.run(f"{verb} ROLE {identifier(user)} LOGIN PASSWORD {literal(scram_verifier(role['password']))}")
            # The admin must be a member of a role to make it a database's owner.
            conn.run(f"GRANT {identifier(user)} TO {identifier(admin)}")
        with step(f"giving the database {database} to {user}"):
            if conn.run("SELECT 1 FROM pg_database WHERE datname = :database", database=database):
                conn.run(f"ALTER DATABASE {identifier(database)} OWNER TO {identifier(user)}")
            else:
                conn.run(f"CREATE DATABASE {identifier(database)} OWNER {identifier(user)}")
            # Its owner connects; nobody else but the admin.
            conn.run(f"REVOKE ALL ON DATABASE {identifier(database)} FROM PUBLIC")
        done.append({"role": user, "database": database, "role_was": "updated" if verb == "ALTER" else "created"})
    # The admin's own database (`postgres`): its owner takes PUBLIC's CONNECT away, so that the
    # roles reach their own databases only. An admin that does not own it only gets a warning from
    # PostgreSQL: the result says whether PUBLIC still connects.
    with step(f"taking PUBLIC's CONNECT to {admin_database} away"):
        conn.run(f"REVOKE CONNECT, TEMPORARY ON DATABASE {identifier(admin_database)} FROM PUBLIC")
        still = conn.run(
            "SELECT 1 FROM pg_database, aclexplode(coalesce(datacl, acldefault('d', datdba))) a "
            "WHERE datname = :database AND a.grantee = 0 AND a.privilege_type = 'CONNECT'",
            database=admin_database,
        )
    return {"roles": done, "public_connects_to_" + admin_database: bool(still)}


def run(event, read_secret, cafile=CA_FILE):
    master = read_secret(event["master_secret_arn"])
    roles = [read_secret(arn) for arn in event["role_secret_arns"]]
    host, port = event["host"], int(event.get("port", 5432))
    admin_database = event.get("admin_database", "postgres")
    with step(f"logging in to {host}:{port}/{admin_database} as {master['username']}"):
        conn = connect(host, port, master["username"], master["password"], admin_database, cafile)
    try:
        return bootstrap(conn, master["username"], admin_database, roles)
    finally:
        with contextlib.suppress(pg8000.native.Error, OSError):
            conn.close()


def handler(event, context):
    import boto3  # in the Lambda runtime; the VPC endpoint answers for Secrets Manager

    client = boto3.client("secretsmanager")

    def read_secret(arn):
        return json.loads(client.get_secret_value(SecretId=arn)["SecretString"])

    return run(event, read_secret)
