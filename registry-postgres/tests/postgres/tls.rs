//! TLS to PostgreSQL (issue 18: the plane was plaintext only): a throwaway cluster with a
//! certificate made here, signed by a CA made here. `verify-full` with the right CA
//! connects, with another CA or another host name it is refused; `require` connects without
//! a CA; with `hostssl` only, a plaintext connection is refused.

use std::time::Duration;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
use registry_postgres::ControlPlane;
use registry_postgres::throwaway::{Cluster, ServerTls};

/// A CA: its certificate (PEM) and what signs with it.
struct Ca {
    pem: String,
    issuer: Issuer<'static, KeyPair>,
}

fn ca(name: &str) -> Ca {
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let key = KeyPair::generate().unwrap();
    let cert = params.self_signed(&key).unwrap();
    Ca {
        pem: cert.pem(),
        issuer: Issuer::new(params, key),
    }
}

/// A server certificate for `localhost` only, signed by `ca`.
fn server_tls(ca: &Ca, tls_only: bool) -> ServerTls {
    let params = CertificateParams::new(vec!["localhost".to_owned()]).unwrap();
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca.issuer).unwrap();
    ServerTls {
        cert_pem: cert.pem(),
        key_pem: key.serialize_pem(),
        tls_only,
    }
}

/// Writes `pem` to a file of its own; its path.
fn ca_file(name: &str, pem: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("registry-tls-{}-{name}.pem", std::process::id()));
    std::fs::write(&path, pem).unwrap();
    path
}

async fn connect(url: &str) -> Result<ControlPlane, registry_postgres::Error> {
    tokio::time::timeout(
        Duration::from_secs(30),
        ControlPlane::builder(url)
            .timeout(Duration::from_secs(5))
            .connect(),
    )
    .await
    .expect("connecting finishes")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_full_checks_the_ca_and_the_host_name_and_require_encrypts() {
    let right = ca("right CA");
    let wrong = ca("wrong CA");
    let cluster = Cluster::start_tls(&server_tls(&right, true)).unwrap();
    let port = cluster.port();
    cluster.create_database("tls").unwrap();
    let right_file = ca_file("right", &right.pem);
    let wrong_file = ca_file("wrong", &wrong.pem);
    let at = |host: &str, query: &str| format!("postgres://postgres@{host}:{port}/tls?{query}");

    // verify-full, the right CA, the name on the certificate: connected, and encrypted.
    let plane = connect(&at(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", right_file.display()),
    ))
    .await
    .unwrap();
    plane.revoke("deploy", "over TLS", "test").await.unwrap();
    assert_eq!(plane.newest_changes(10).await.unwrap().len(), 1);

    // registry-admin takes the same URL.
    let admin = |url: String| {
        std::process::Command::new(env!("CARGO_BIN_EXE_registry-admin"))
            .args(["--database", &url, "changes"])
            .env_remove("DATABASE_URL")
            .output()
            .unwrap()
    };
    let listed = admin(at(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", right_file.display()),
    ));
    assert!(listed.status.success(), "{listed:?}");
    assert!(String::from_utf8_lossy(&listed.stdout).contains("over TLS"));
    let refused = admin(at(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", wrong_file.display()),
    ));
    assert_eq!(refused.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(stderr.contains("sslrootcert names the CA"), "{stderr}");

    // Another CA: refused, and the error says it is the certificate.
    let error = connect(&at(
        "localhost",
        &format!("sslmode=verify-full&sslrootcert={}", wrong_file.display()),
    ))
    .await
    .unwrap_err()
    .to_string();
    eprintln!("another CA: {error}");
    assert!(
        error.to_lowercase().contains("certificate"),
        "another CA: {error}"
    );

    // Another host name (the certificate names localhost, not 127.0.0.1): refused.
    let error = connect(&at(
        "127.0.0.1",
        &format!("sslmode=verify-full&sslrootcert={}", right_file.display()),
    ))
    .await
    .unwrap_err()
    .to_string();
    eprintln!("another host name: {error}");
    assert!(
        error.to_lowercase().contains("certificate") && error.contains("127.0.0.1"),
        "another host name: {error}"
    );
    // verify-ca checks the chain only: the same host name passes.
    connect(&at(
        "127.0.0.1",
        &format!("sslmode=verify-ca&sslrootcert={}", right_file.display()),
    ))
    .await
    .unwrap();
    // ... but not another CA.
    assert!(
        connect(&at(
            "127.0.0.1",
            &format!("sslmode=verify-ca&sslrootcert={}", wrong_file.display()),
        ))
        .await
        .is_err()
    );

    // require: encrypted without a CA (as libpq), whatever the name.
    connect(&at("127.0.0.1", "sslmode=require")).await.unwrap();
    // prefer is taken as require.
    connect(&at("127.0.0.1", "sslmode=prefer")).await.unwrap();

    // verify-full with a CA file that is not there: refused before connecting, naming it.
    let error = connect(&at(
        "localhost",
        "sslmode=verify-full&sslrootcert=/nonexistent/ca.pem",
    ))
    .await
    .unwrap_err()
    .to_string();
    assert!(error.contains("/nonexistent/ca.pem"), "{error}");

    // With hostssl only, plaintext (no sslmode, or disable) is refused by the server.
    for query in ["", "sslmode=disable"] {
        let error = connect(&at("127.0.0.1", query))
            .await
            .unwrap_err()
            .to_string();
        eprintln!("plaintext ({query:?}): {error}");
        assert!(
            error.contains("pg_hba.conf") && error.contains("no encryption"),
            "plaintext ({query:?}): {error}"
        );
    }
    let _ = std::fs::remove_file(right_file);
    let _ = std::fs::remove_file(wrong_file);
}
