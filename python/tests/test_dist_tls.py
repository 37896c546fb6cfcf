"""volley.dist over TLS: a server with a certificate, clients that verify it against a CA, and
mutual TLS. The certificates are made at test time with Debian's ``openssl`` (a throwaway CA
and certificates naming 127.0.0.1); nothing secret is in the repository. The token still
authorizes every call."""

from __future__ import annotations

import shutil
import subprocess
import time

import numpy as np
import pytest

import volley

if not volley._volley._has_dist:
    pytest.skip("built without the distributed service (gRPC)", allow_module_level=True)
if shutil.which("openssl") is None:
    pytest.skip("openssl (Debian package) is not installed", allow_module_level=True)

import volley.dist as vd  # noqa: E402

TOKEN = "tls-token"


def _openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


def _make_ca(directory, name):
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-keyout", f"{name}.key", "-out", f"{name}.pem", "-subj", f"/CN={name}", cwd=directory)


def _make_cert(directory, ca, name):
    """A certificate for 127.0.0.1 / localhost, signed by `ca`."""
    (directory / f"{name}.ext").write_text(
        "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n")
    _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", f"{name}.key",
             "-out", f"{name}.csr", "-subj", f"/CN={name}", cwd=directory)
    _openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
             "-CAcreateserial", "-days", "2", "-out", f"{name}.pem", "-extfile", f"{name}.ext",
             cwd=directory)


@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    d = tmp_path_factory.mktemp("pki")
    _make_ca(d, "ca")
    _make_ca(d, "other-ca")
    _make_cert(d, "ca", "server")
    _make_cert(d, "ca", "client")
    _make_cert(d, "other-ca", "stranger")
    return d


@pytest.fixture(scope="module")
def parts(tmp_path_factory, cora_dir):
    out = tmp_path_factory.mktemp("cora-2-tls")
    volley.partition(cora_dir, out, 2, method="random", seed=0)
    return str(out)


def _serve_both(parts, pki, **tls):
    s1 = vd.serve(parts, 1, token=TOKEN, tls_cert=pki / "server.pem",
                  tls_key=pki / "server.key", **tls)
    s0 = vd.serve(parts, 0, token=TOKEN, tls_cert=pki / "server.pem",
                  tls_key=pki / "server.key", peers=["", s1.address], **tls)
    return s0, s1


def test_tls_serves_clients_that_verify_it(parts, pki):
    s0, s1 = _serve_both(parts, pki)
    with s0, s1:
        addresses = [s0.address, s1.address]
        graph = vd.connect(addresses, token=TOKEN, tls_ca=pki / "ca.pem", connect_timeout=10)
        ids = np.arange(0, 2708, 7)
        assert graph.labels[ids].shape == ids.shape
        batches = vd.DistNeighborLoader(graph, [5, 5], batch_size=512)
        assert sum(b.batch_size for b in batches) == 2708
        # Server-client topology: the server calls its peer over plaintext by default, which
        # a TLS peer refuses; with peer_tls_ca it verifies the peer and streams.
        s1b = vd.serve(parts, 1, token=TOKEN, tls_cert=pki / "server.pem",
                       tls_key=pki / "server.key")
        s0b = vd.serve(parts, 0, token=TOKEN, tls_cert=pki / "server.pem",
                       tls_key=pki / "server.key", peers=["", s1b.address],
                       peer_tls_ca=pki / "ca.pem")
        with s0b, s1b:
            loader = vd.DistNeighborLoader(
                [s0b.address, s1b.address], [5], batch_size=1024, topology="server-client",
                server=s0b.address, token=TOKEN, tls_ca=pki / "ca.pem", connect_timeout=10)
            assert sum(b.batch_size for b in loader) == 2708


def test_tls_refuses_what_does_not_verify(parts, pki):
    s0, s1 = _serve_both(parts, pki)
    with s0, s1:
        addresses = [s0.address, s1.address]
        started = time.monotonic()
        with pytest.raises(volley.VolleyConnectionError, match="part 0"):
            vd.connect(addresses, token=TOKEN, connect_timeout=1.0)  # plaintext to TLS
        with pytest.raises(volley.VolleyConnectionError):
            vd.connect(addresses, token=TOKEN, tls_ca=pki / "other-ca.pem", connect_timeout=1.0)
        assert time.monotonic() - started < 2 * (1.0 + 1.0)  # each within its connect_timeout + 1 s
        # The token still authorizes.
        with pytest.raises(volley.VolleyPermissionError):
            vd.connect(addresses, token="wrong", tls_ca=pki / "ca.pem", connect_timeout=5)
    # A TLS client meeting a plaintext server.
    with vd.serve(parts, 0) as p0, vd.serve(parts, 1) as p1:
        with pytest.raises(volley.VolleyConnectionError):
            vd.connect([p0.address, p1.address], tls_ca=pki / "ca.pem", connect_timeout=1.0)


def test_mutual_tls_needs_a_client_certificate_from_the_ca(parts, pki):
    s0, s1 = _serve_both(parts, pki, tls_client_ca=pki / "ca.pem")
    with s0, s1:
        addresses = [s0.address, s1.address]
        with pytest.raises(volley.VolleyConnectionError):
            vd.connect(addresses, token=TOKEN, tls_ca=pki / "ca.pem", connect_timeout=1.0)
        with pytest.raises(volley.VolleyConnectionError):
            vd.connect(addresses, token=TOKEN, tls_ca=pki / "ca.pem", connect_timeout=1.0,
                       tls_cert=pki / "stranger.pem", tls_key=pki / "stranger.key")
        graph = vd.connect(addresses, token=TOKEN, tls_ca=pki / "ca.pem", connect_timeout=10,
                           tls_cert=pki / "client.pem", tls_key=pki / "client.key")
        assert graph.labels[np.arange(10)].shape == (10,)
        # With a client CA the server calls its peers with its own certificate: epochs stream.
        loader = vd.DistNeighborLoader(
            addresses, [5], batch_size=1024, topology="server-client", server=s0.address,
            token=TOKEN, tls_ca=pki / "ca.pem", tls_cert=pki / "client.pem",
            tls_key=pki / "client.key", connect_timeout=10)
        assert sum(b.batch_size for b in loader) == 2708


def test_each_tls_fault_is_named_at_once(parts, pki):
    """A failed TLS handshake is reported within a second, saying what failed (not "no server
    answered" after the connect timeout); a port nobody listens on still waits for it."""
    def fails_fast(addresses, match, **tls):
        started = time.monotonic()
        with pytest.raises(volley.VolleyConnectionError, match=match):
            vd.connect(addresses, token=TOKEN, connect_timeout=20, **tls)
        assert time.monotonic() - started < 5  # far below connect_timeout

    s0, s1 = _serve_both(parts, pki)
    with s0, s1:
        addresses = [s0.address, s1.address]
        fails_fast(addresses, "part 0 at .*closed the connection at once: it may expect TLS")
        fails_fast(addresses, "certificate does not verify against tls_ca",
                   tls_ca=pki / "other-ca.pem")
    with vd.serve(parts, 0) as p0, vd.serve(parts, 1) as p1:
        fails_fast([p0.address, p1.address], "does not speak TLS", tls_ca=pki / "ca.pem")
    s0, s1 = _serve_both(parts, pki, tls_client_ca=pki / "ca.pem")
    with s0, s1:
        addresses = [s0.address, s1.address]
        fails_fast(addresses, "may ask for a client certificate", tls_ca=pki / "ca.pem")
        fails_fast(addresses, "may not accept this client's certificate", tls_ca=pki / "ca.pem",
                   tls_cert=pki / "stranger.pem", tls_key=pki / "stranger.key")
    started = time.monotonic()
    with pytest.raises(volley.VolleyConnectionError, match="no server answered within 1"):
        vd.connect(["127.0.0.1:1", "127.0.0.1:2"], connect_timeout=1.0)
    assert time.monotonic() - started >= 0.9  # waited for a server that may still be starting


def test_a_key_that_does_not_match_its_certificate_is_named(parts, pki):
    with pytest.raises(volley.VolleyValueError,
                       match="key .*client.key' does not match the certificate .*server.pem"):
        vd.serve(parts, 0, tls_cert=pki / "server.pem", tls_key=pki / "client.key")


def test_bad_tls_files_are_clear_errors(parts, pki, tmp_path):
    with pytest.raises(volley.VolleyOSError, match="missing.pem"):
        vd.serve(parts, 0, tls_cert=tmp_path / "missing.pem", tls_key=pki / "server.key")
    (tmp_path / "junk.pem").write_text("not a certificate")
    with pytest.raises(volley.VolleyOSError, match="PEM"):
        vd.serve(parts, 0, tls_cert=tmp_path / "junk.pem", tls_key=pki / "server.key")
    with pytest.raises(volley.VolleyValueError, match="key"):
        vd.serve(parts, 0, tls_cert=pki / "server.pem")
    with vd.serve(parts, 0) as p0, vd.serve(parts, 1) as p1:
        with pytest.raises(volley.VolleyOSError, match="missing-ca.pem"):
            vd.connect([p0.address, p1.address], tls_ca=tmp_path / "missing-ca.pem")


def test_bench_dist_runs_over_tls(pki):
    """`volley bench dist --tls-cert/--tls-key/--tls-ca`: the same checks and rows over TLS."""
    from test_dist import _cli

    cli = _cli()
    if cli is None or "--tls-ca" not in subprocess.run(
            [cli, "bench", "dist", "--help"], capture_output=True, text=True).stdout:
        pytest.skip("no volley CLI of this build with bench dist's TLS flags (set VOLLEY_CLI)")
    run = subprocess.run(
        [cli, "--quiet", "bench", "dist", "--generate", "powerlaw", "--nodes", "3000",
         "--edges", "30000", "--batch-size", "64", "--batches", "2", "--check-batches", "1",
         "--threads", "1", "--json", "--tls-cert", str(pki / "server.pem"),
         "--tls-key", str(pki / "server.key"), "--tls-ca", str(pki / "ca.pem")],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    assert "dist client" in run.stdout
    # A CA that did not sign the servers' certificate: the clients refuse to connect.
    bad = subprocess.run(
        [cli, "--quiet", "bench", "dist", "--generate", "powerlaw", "--nodes", "3000",
         "--edges", "30000", "--batch-size", "64", "--batches", "1", "--threads", "1",
         "--tls-cert", str(pki / "server.pem"), "--tls-key", str(pki / "server.key"),
         "--tls-ca", str(pki / "other-ca.pem")],
        capture_output=True, text=True, timeout=300)
    assert bad.returncode != 0
    # Half the flags is a usage error naming what was given.
    half = subprocess.run([cli, "bench", "dist", "--generate", "powerlaw", "--nodes", "3000",
                           "--edges", "30000", "--tls-cert", str(pki / "server.pem")],
                          capture_output=True, text=True, timeout=60)
    assert half.returncode != 0 and "--tls-ca together" in half.stderr
