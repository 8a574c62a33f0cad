//! An operator points `hk-top` at a real server: one with a password, one
//! where it logs in as an ACL user allowed `HK.HOTKEYS` and nothing else,
//! one that speaks TLS (a CA made here, verified, wrong CA refused), always
//! with `redis-cli`'s flags; and asks it for `--help` and `--version`.

use test_harness as common;

use crate::support::{hk_top as hk_top_output, hk_top_ok};
use common::{cli, config_set, free_port, repeat, words, Server, TRACK_EVERY_COMMAND};
use std::path::Path;
use std::process::Command;

/// Runs `hk-top --once` with `args`; its table, or a panic with stderr.
fn table(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = hk_top_output(&[args, &["--once"]].concat(), env);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {said}");
    String::from_utf8(out.stdout).unwrap()
}

/// Refused: non-zero exit, and stderr says why.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let out = hk_top_output(&[args, &["--once"]].concat(), env);
    assert!(!out.status.success(), "{args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_password_from_the_flag_the_environment_or_the_url_or_an_acl_user() {
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &[]);
    let mut con = server.client();
    repeat(&mut con, 5, &["GET", "cart:7"]);
    config_set(&mut con, "requirepass", "s3cret");
    let port = server.port.to_string();
    for (args, env) in [
        (vec!["-p", &port, "-a", "s3cret"], vec![]),
        (vec!["-p", &port, "--pass", "s3cret"], vec![]),
        (vec!["-p", &port], vec![("REDISCLI_AUTH", "s3cret")]),
    ] {
        let listed = table(&args, &env);
        assert!(listed.contains("cart:7"), "{args:?}: {listed}");
    }
    let url = format!("redis://:s3cret@127.0.0.1:{port}");
    assert!(table(&["-u", &url], &[]).contains("cart:7"));
    let e = refused(&["-p", &port, "-a", "wrong"], &[]);
    assert!(e.contains("cannot reach") && e.contains("auth"), "{e}");
    let e = refused(&["-p", &port], &[]);
    assert!(e.contains("NOAUTH") || e.contains("auth"), "{e}");
    // An ACL user allowed `HK.HOTKEYS` and nothing else.
    cli(&mut con, "ACL SETUSER watcher on >pw -@all +hk.hotkeys");
    let listed = table(&["-p", &port, "--user", "watcher", "--pass", "pw"], &[]);
    assert!(listed.contains("cart:7"), "{listed}");
    let url = format!("redis://watcher:pw@127.0.0.1:{port}");
    assert!(table(&["-u", &url], &[]).contains("cart:7"));
    // The user really is that narrow.
    let mut narrow = redis::Client::open(url.as_str())
        .unwrap()
        .get_connection()
        .unwrap();
    assert!(redis::cmd("GET")
        .arg("cart:7")
        .query::<Option<String>>(&mut narrow)
        .is_err());
}

/// A test CA, and a certificate it signs for 127.0.0.1 and localhost.
fn make_certificates(dir: &Path) {
    // Each command a line of words, then words that hold spaces.
    let openssl = |line: &str, last: &[&str]| {
        let out = Command::new("openssl")
            .args(line.split(' '))
            .args(last)
            .current_dir(dir)
            .output()
            .expect("openssl (make deps installs it)");
        let said = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "openssl {line}: {said}");
    };
    // A self-signed CA: its key, its certificate.
    let ca = |name: &str, subject: &str| {
        let line = format!(
            "req -x509 -newkey rsa:2048 -nodes -keyout {name}.key -out {name}.crt -days 2 -subj"
        );
        openssl(&line, &[subject]);
    };
    ca("ca", "/CN=hk-top test CA");
    let request = "req -newkey rsa:2048 -nodes -keyout server.key -out server.csr";
    openssl(request, &["-subj", "/CN=localhost"]);
    std::fs::write(
        dir.join("san.cnf"),
        "subjectAltName=IP:127.0.0.1,DNS:localhost\n",
    )
    .unwrap();
    let sign = "x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial";
    openssl(
        sign,
        &["-out", "server.crt", "-days", "2", "-extfile", "san.cnf"],
    );
    // Another CA, which signed nothing this server shows.
    ca("other", "/CN=another CA");
}

#[test]
fn a_tls_listener_verified_against_the_test_ca() {
    let certs = tempfile::tempdir().unwrap();
    make_certificates(certs.path());
    let tls_port = free_port().to_string();
    let file = |name: &str| certs.path().join(name).to_string_lossy().into_owned();
    let (cert, key, ca) = (file("server.crt"), file("server.key"), file("ca.crt"));
    let files = format!("--tls-cert-file {cert} --tls-key-file {key} --tls-ca-cert-file {ca}");
    let tls = format!("--tls-port {tls_port} {files} --tls-auth-clients no");
    let server = Server::start_configured(TRACK_EVERY_COMMAND, &words(&tls));
    let mut con = server.client();
    repeat(&mut con, 5, &["GET", "session:abc"]);
    config_set(&mut con, "requirepass", "t1s");
    let listed = table(
        &["-p", &tls_port, "--tls", "--cacert", &ca, "-a", "t1s"],
        &[],
    );
    assert!(listed.contains("session:abc"), "{listed}");
    let url = format!("rediss://default:t1s@localhost:{tls_port}");
    assert!(table(&["-u", &url, "--cacert", &ca], &[]).contains("session:abc"));
    // The whole address in the NODE column.
    assert!(
        listed.contains(&format!("127.0.0.1:{tls_port}")),
        "{listed}"
    );
    // A certificate from a CA not asked for is refused, unless told not to check.
    let other = file("other.crt");
    let e = refused(
        &["-p", &tls_port, "--tls", "--cacert", &other, "-a", "t1s"],
        &[],
    );
    assert!(e.to_lowercase().contains("certificate"), "{e}");
    assert!(
        table(&["-p", &tls_port, "--tls", "--insecure", "-a", "t1s"], &[]).contains("session:abc")
    );
    // Plain text to a TLS port gets nowhere.
    refused(&["-p", &tls_port, "-a", "t1s"], &[]);
}

#[test]
fn help_version_and_clear_errors() {
    let help = hk_top_ok(&["--help"]);
    let flags = "--host --port --url --user --pass --tls --cacert --prometheus REDISCLI_AUTH";
    for flag in words(flags) {
        assert!(help.contains(flag), "{flag} missing from:\n{help}");
    }
    assert!(hk_top_ok(&["--version"]).starts_with("hk-top "));
    for bad in [
        &["--port", "http"][..],
        &["--count", "0"],
        &["--frobnicate"],
        &["--once", "--json"],
    ] {
        let out = hk_top_output(bad, &[]);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let e = String::from_utf8_lossy(&out.stderr);
        assert!(e.starts_with("error:"), "{bad:?}: {e}");
    }
}
