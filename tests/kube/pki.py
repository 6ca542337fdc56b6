"""A throwaway PKI for the test control plane, as envtest makes one: a CA, the API server's serving
certificate, an admin client certificate (group system:masters) and the service-account signing key; client
certificates for other identities (the real node's kubelet and kube-proxy) on demand."""

from __future__ import annotations

import datetime as dt
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Pki:
    ca_cert: Path
    serving_cert: Path
    serving_key: Path
    admin_cert: Path
    admin_key: Path
    sa_key: Path  # RSA: kube-apiserver signs service-account tokens with it (TokenRequest)
    sa_pub: Path
    ca_key: Path

    def client(self, name: str, common_name: str, organization: str | None = None) -> tuple[Path, Path]:
        """A client certificate and key for this user (and group), written beside the CA as NAME.crt/.key."""
        ca_key = serialization.load_pem_private_key(self.ca_key.read_bytes(), password=None)
        assert isinstance(ca_key, ec.EllipticCurvePrivateKey)
        ca = x509.load_pem_x509_certificate(self.ca_cert.read_bytes())
        cert, key = _issue(ca.subject, ca_key, _name(common_name, organization), ExtendedKeyUsageOID.CLIENT_AUTH)
        directory = self.ca_cert.parent
        return _write_cert(directory / f"{name}.crt", cert), _write_key(directory / f"{name}.key", key)


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    parts = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        parts.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(parts)


def _write_key(path: Path, key: ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey) -> Path:
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(0o600)
    return path


def _write_cert(path: Path, cert: x509.Certificate) -> Path:
    path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    return path


def _validity() -> tuple[dt.datetime, dt.datetime]:
    """Valid for a day from five minutes ago (a test session is far shorter)."""
    now = dt.datetime.now(dt.timezone.utc) - dt.timedelta(minutes=5)
    return now, now + dt.timedelta(days=1)


def _issue(ca_name: x509.Name, ca_key: ec.EllipticCurvePrivateKey, subject: x509.Name,
           usage: x509.ObjectIdentifier, sans: list[x509.GeneralName] | None = None,
           ) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    now, until = _validity()
    key = ec.generate_private_key(ec.SECP256R1())
    builder = (x509.CertificateBuilder().subject_name(subject).issuer_name(ca_name)
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now).not_valid_after(until)
               .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
               .add_extension(x509.ExtendedKeyUsage([usage]), critical=False))
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    return builder.sign(ca_key, hashes.SHA256()), key


def make_pki(directory: Path, service_ip: str, address: str = "127.0.0.1") -> Pki:
    """All files in `directory`; the API server's certificate names `address` (where it listens) too."""
    directory.mkdir(parents=True, exist_ok=True)
    now, until = _validity()

    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("hivecat-test-ca")
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(x509.random_serial_number()).not_valid_before(now).not_valid_after(until)
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                       content_commitment=False, key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False, decipher_only=False),
                         critical=True)
          .sign(ca_key, hashes.SHA256()))

    addresses = sorted({"127.0.0.1", service_ip, address})
    serving, serving_key = _issue(ca_name, ca_key, _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, [
        x509.DNSName("localhost"), x509.DNSName("kubernetes"), x509.DNSName("kubernetes.default"),
        x509.DNSName("kubernetes.default.svc"), x509.DNSName("kubernetes.default.svc.cluster.local"),
        *[x509.IPAddress(ipaddress.ip_address(ip)) for ip in addresses],
    ])
    admin, admin_key = _issue(ca_name, ca_key, _name("hivecat-test-admin", "system:masters"),
                              ExtendedKeyUsageOID.CLIENT_AUTH)
    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    sa_pub = directory / "sa.pub"
    sa_pub.write_bytes(sa_key.public_key().public_bytes(serialization.Encoding.PEM,
                                                        serialization.PublicFormat.SubjectPublicKeyInfo))
    return Pki(
        ca_cert=_write_cert(directory / "ca.crt", ca),
        serving_cert=_write_cert(directory / "apiserver.crt", serving),
        serving_key=_write_key(directory / "apiserver.key", serving_key),
        admin_cert=_write_cert(directory / "admin.crt", admin),
        admin_key=_write_key(directory / "admin.key", admin_key),
        sa_key=_write_key(directory / "sa.key", sa_key),
        sa_pub=sa_pub,
        ca_key=_write_key(directory / "ca.key", ca_key),
    )
