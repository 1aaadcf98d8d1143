"""A throwaway certificate authority (trustme) and a certificate it signed for 127.0.0.1:
TLS for the local model servers of the HTTP/2 tests and bench, trusted by the client
through an SSLContext given to it, never through anything process-wide."""

from __future__ import annotations

import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import trustme


@dataclass(frozen=True)
class ThrowawayCA:
    """A CA made for one test session or bench run, and its certificate for 127.0.0.1."""

    ca: trustme.CA
    leaf: trustme.LeafCert

    @classmethod
    def make(cls) -> ThrowawayCA:
        """A new CA (ECDSA keys, as trustme makes them) and a leaf for 127.0.0.1."""
        ca = trustme.CA()
        return cls(ca, ca.issue_cert("127.0.0.1"))

    def client_context(self) -> ssl.SSLContext:
        """A client context that trusts this CA only."""
        context = ssl.create_default_context()
        self.ca.configure_trust(context)
        return context

    def server_context(self, alpn: Sequence[str]) -> ssl.SSLContext:
        """A server context presenting the leaf and offering `alpn` (h2, http/1.1)."""
        context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self.leaf.configure_cert(context)
        context.set_alpn_protocols(list(alpn))
        return context

    def write_server_files(self, folder: Path) -> tuple[Path, Path]:
        """The leaf's certificate chain and private key as PEM files in `folder`."""
        cert_path, key_path = folder / "server.pem", folder / "server.key"
        cert_path.write_bytes(b"".join(blob.bytes() for blob in self.leaf.cert_chain_pems))
        key_path.write_bytes(self.leaf.private_key_pem.bytes())
        return cert_path, key_path
