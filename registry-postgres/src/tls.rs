//! TLS to PostgreSQL, through rustls: what the URL's `sslmode` and `sslrootcert` ask for.
//!
//! | `sslmode` | what happens |
//! |---|---|
//! | not given | plaintext to this machine (a Unix socket, `localhost`, a loopback address); **refused** to any other host, naming `sslmode=verify-full` (or `sslmode=disable` to mean plaintext) |
//! | `disable` | plaintext |
//! | `prefer` | taken as `require`: a connection is encrypted or not made (never downgraded silently) |
//! | `require` | encrypted; the certificate is not checked, as libpq does (but with `sslrootcert`, as `verify-ca`) |
//! | `verify-ca` | encrypted; the chain is checked against the CA, the host name is not |
//! | `verify-full` | encrypted; the chain and the host name are checked |
//! | `allow` | refused: it would fall back to plaintext |
//!
//! The CA is `sslrootcert=/path/to/ca.pem` (PEM, one or more certificates), or
//! `sslrootcert=system` for the system's store; without it, `~/.postgresql/root.crt` as libpq
//! does, and an error saying how to name one when that is missing too.

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::error::Error;

/// The connector every connection of a plane uses.
pub(crate) type Connector = MakeRustlsConnect;

/// How the URL asks to connect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Plain,
    Require,
    VerifyCa,
    VerifyFull,
}

/// Parses `url`, the TLS options taken out of it first (tokio-postgres knows neither
/// `verify-ca`/`verify-full` nor `sslrootcert`): the driver's configuration, and the
/// connector for it.
pub(crate) fn configure(url: &str) -> Result<(tokio_postgres::Config, Connector), Error> {
    let (rest, sslmode, rootcert) = take_tls_options(url);
    let mut mode = match sslmode.as_deref() {
        None | Some("disable") => Mode::Plain,
        Some("prefer" | "require") => Mode::Require,
        Some("verify-ca") => Mode::VerifyCa,
        Some("verify-full") => Mode::VerifyFull,
        Some("allow") => {
            return Err(Error::Url(
                "sslmode=allow would fall back to plaintext; write sslmode=require (or verify-full) \
                 to encrypt, or sslmode=disable for plaintext"
                    .to_owned(),
            ));
        }
        Some(other) => {
            return Err(Error::Url(format!(
                "sslmode={other} is not known; write disable, require, verify-ca or verify-full"
            )));
        }
    };
    if mode == Mode::Require && rootcert.is_some() {
        // As libpq: a CA given means it is checked.
        mode = Mode::VerifyCa;
    }
    let mut config: tokio_postgres::Config = rest
        .parse()
        .map_err(|error: tokio_postgres::Error| Error::Url(error.to_string()))?;
    if sslmode.is_none()
        && let Some(remote) = remote_host(&config)
    {
        return Err(Error::Url(format!(
            "the URL names no sslmode and its host {remote:?} is not this machine: the \
             connection would be plaintext, and anyone on the path could read and forge \
             revocations, verdicts and quota answers. Add \
             sslmode=verify-full&sslrootcert=/path/to/ca.pem to the URL (recommended: \
             encrypted, the certificate and the host name checked), or sslmode=disable to \
             mean plaintext"
        )));
    }
    config.ssl_mode(if mode == Mode::Plain {
        SslMode::Disable
    } else {
        SslMode::Require
    });
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|error| Error::Tls(format!("no TLS protocol version: {error}")))?;
    let verifier: Arc<dyn ServerCertVerifier> = match mode {
        Mode::Plain | Mode::Require => Arc::new(Unverified(provider)),
        Mode::VerifyCa | Mode::VerifyFull => {
            let roots = roots(rootcert.as_deref())?;
            let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|error| Error::Tls(format!("cannot check certificates: {error}")))?;
            if mode == Mode::VerifyCa {
                Arc::new(ChainOnly(webpki))
            } else {
                webpki
            }
        }
    };
    let client = builder
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth();
    Ok((config, MakeRustlsConnect::new(client)))
}

/// The first host of `config` that is not this machine, if any: a plaintext connection
/// without an `sslmode` is made only to a Unix socket, `localhost` or a loopback address
/// (and, with `hostaddr`, only when every address given is a loopback one).
fn remote_host(config: &tokio_postgres::Config) -> Option<String> {
    use tokio_postgres::config::Host;
    let local_name = |name: &str| {
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        name.eq_ignore_ascii_case("localhost")
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    };
    let addresses = config.get_hostaddrs();
    if let Some(address) = addresses.iter().find(|address| !address.is_loopback()) {
        return Some(address.to_string());
    }
    config.get_hosts().iter().find_map(|host| match host {
        // `hostaddr` decides where a named host's connection goes.
        Host::Tcp(name) if addresses.is_empty() && !local_name(name) => Some(name.clone()),
        _ => None,
    })
}

/// `url` without `sslmode` and `sslrootcert`, and their values.
pub(crate) fn take_tls_options(url: &str) -> (String, Option<String>, Option<String>) {
    let mut sslmode = None;
    let mut rootcert = None;
    let mut take = |key: &str, value: String| match key {
        "sslmode" => {
            sslmode = Some(value);
            true
        }
        "sslrootcert" => {
            rootcert = Some(value);
            true
        }
        _ => false,
    };
    let rest = if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        match url.split_once('?') {
            None => url.to_owned(),
            Some((base, query)) => {
                let kept: Vec<&str> = query
                    .split('&')
                    .filter(|pair| {
                        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                        !take(key, percent_decode(value))
                    })
                    .collect();
                if kept.is_empty() {
                    base.to_owned()
                } else {
                    format!("{base}?{}", kept.join("&"))
                }
            }
        }
    } else {
        // The key-value form: `host=... sslmode=verify-full sslrootcert=/ca.pem`.
        url.split_whitespace()
            .filter(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                !take(key, value.trim_matches('\'').to_owned())
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    (rest, sslmode, rootcert)
}

/// `%XX` sequences decoded (a path in a URL's query).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%'
            && let Some(hex) = text.get(index + 1..index + 3)
            && let Ok(byte) = u8::from_str_radix(hex, 16)
        {
            out.push(byte);
            index += 3;
            continue;
        }
        out.push(bytes[index]);
        index += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The CAs a certificate is checked against.
fn roots(rootcert: Option<&str>) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    if rootcert == Some("system") {
        let found = rustls_native_certs::load_native_certs();
        roots.add_parsable_certificates(found.certs);
        if roots.is_empty() {
            return Err(Error::Tls(
                "sslrootcert=system: the system has no CA certificates; name a file with \
                 sslrootcert=/path/to/ca.pem"
                    .to_owned(),
            ));
        }
        return Ok(roots);
    }
    let path = match rootcert {
        Some(path) => std::path::PathBuf::from(path),
        None => {
            let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
            match home.map(|home| home.join(".postgresql/root.crt")) {
                Some(path) if path.is_file() => path,
                _ => {
                    return Err(Error::Tls(
                        "checking the server's certificate needs a CA: add sslrootcert=/path/to/ca.pem \
                         (or sslrootcert=system) to the URL"
                            .to_owned(),
                    ));
                }
            }
        }
    };
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .map_err(|error| {
            Error::Tls(format!(
                "cannot read the CA certificates of {}: {error}",
                path.display()
            ))
        })?;
    let (added, _) = roots.add_parsable_certificates(certs);
    if added == 0 {
        return Err(Error::Tls(format!(
            "{} holds no CA certificate (PEM, -----BEGIN CERTIFICATE-----)",
            path.display()
        )));
    }
    Ok(roots)
}

/// `sslmode=require`: encrypted, the certificate not checked (the handshake's signatures
/// still are).
#[derive(Debug)]
struct Unverified(Arc<CryptoProvider>);

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// `sslmode=verify-ca`: the chain checked, the host name not.
#[derive(Debug)]
struct ChainOnly(Arc<WebPkiServerVerifier>);

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self
            .0
            .verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)
        {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::NotValidForName
                | rustls::CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.0.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.supported_verify_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tls_options_are_taken_out_of_both_forms() {
        let (rest, mode, root) = take_tls_options(
            "postgres://u@h:5/db?application_name=x&sslmode=verify-full&sslrootcert=%2Ftmp%2Fca.pem",
        );
        assert_eq!(rest, "postgres://u@h:5/db?application_name=x");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/tmp/ca.pem"));
        let (rest, mode, root) = take_tls_options("postgres://u@h/db?sslmode=require");
        assert_eq!(rest, "postgres://u@h/db");
        assert_eq!(mode.as_deref(), Some("require"));
        assert_eq!(root, None);
        let (rest, mode, root) =
            take_tls_options("host=h user=u sslmode=verify-ca sslrootcert='/ca.pem'");
        assert_eq!(rest, "host=h user=u");
        assert_eq!(mode.as_deref(), Some("verify-ca"));
        assert_eq!(root.as_deref(), Some("/ca.pem"));
    }

    #[test]
    fn no_sslmode_is_refused_to_a_host_that_is_not_this_machine() {
        for url in [
            "postgres://u@db.internal/db",
            "postgres://u@10.0.0.5:5432/db",
            "postgres://u@[2001:db8::1]/db",
            "host=db.internal user=u dbname=db",
            // A loopback name, but the address it connects to is not.
            "host=localhost hostaddr=10.0.0.5 user=u",
            // One remote host among several is enough.
            "host=127.0.0.1,db.internal user=u",
            "postgres://u@db.example\u{202e}moc/db",
        ] {
            let error = configure(url).err().map(|error| error.to_string());
            let text = error.as_deref().unwrap_or_default();
            assert!(
                text.contains("sslmode=verify-full") && text.contains("sslmode=disable"),
                "{url}: {error:?}"
            );
            assert!(!text.contains('\u{202e}'), "escaped: {text}");
        }
        for url in [
            "postgres://u@127.0.0.1:5432/db",
            "postgres://u@127.8.9.10/db",
            "postgres://u@localhost/db",
            "postgres://u@LocalHost/db",
            "postgres://u@[::1]:5432/db",
            "host=/var/run/postgresql user=u",
            "host=localhost,127.0.0.1 user=u",
            "host=db.internal hostaddr=127.0.0.1 user=u",
            // Plaintext said explicitly, or TLS asked for: any host.
            "postgres://u@db.internal/db?sslmode=disable",
            "postgres://u@db.internal/db?sslmode=require",
            "host=db.internal user=u sslmode=disable",
        ] {
            assert!(configure(url).is_ok(), "{url}: {:?}", configure(url).err());
        }
    }

    #[test]
    fn unknown_or_downgrading_modes_are_refused() {
        for url in [
            "postgres://u@h/db?sslmode=allow",
            "postgres://u@h/db?sslmode=verify_full",
        ] {
            let error = configure(url).err().map(|error| error.to_string());
            assert!(
                error
                    .as_deref()
                    .is_some_and(|text| text.contains("sslmode")),
                "{url}: {error:?}"
            );
        }
        let error = configure("postgres://u@h/db?sslmode=verify-full&sslrootcert=/nonexistent.pem")
            .err()
            .map(|error| error.to_string());
        assert!(
            error
                .as_deref()
                .is_some_and(|text| text.contains("/nonexistent.pem")),
            "{error:?}"
        );
    }
}
