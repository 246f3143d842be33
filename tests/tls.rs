//! TLS end to end: every TLS scheme against the built-in servers on every engine, the bytes on
//! both layers (the wire, audited against the kernel, and the plaintext inside), resumption,
//! the failures a user meets (unknown CA, wrong name, refused version, a plaintext port), and
//! real peers: nginx with `ssl`, a real nsqd with `--tls-cert` (its `tls_v1` upgrade and its
//! HTTPS side), and Python's `websockets` with an SSL context.

mod common;
use common::*;
use std::path::PathBuf;
use wirebench::outcome::ErrorClass;
use wirebench::stats::Report;

/// TLS 1.3 record overhead with an AEAD of 16-byte tags: header 5 + inner type 1 + tag 16.
const TLS13_RECORD: f64 = 22.0;
/// TLS 1.2 with AES-GCM: header 5 + explicit nonce 8 + tag 16.
const TLS12_RECORD: f64 = 29.0;

/// A built-in server serving TLS (`serve KIND --tls`, self-signed) on `engine`; its targets and
/// the certificate's PEM file for `--ca`.
fn tls_server(
    engine: &str,
    kind: &str,
    extra: &[&str],
) -> (wirebench::engine::ServerHandle, Vec<String>, String) {
    let started = serve_started(engine, kind, &[&["--tls"], extra].concat());
    let tls = started.tls.expect("a TLS server");
    let path = std::env::temp_dir().join(format!("wirebench-test-{}.pem", started.handle.addr().port()));
    std::fs::write(&path, &tls.cert_pem).unwrap();
    (started.handle, started.urls.concat(), path.display().to_string())
}

/// A certificate and key for `names`, written as PEM files in a fresh directory.
fn cert_files(tag: &str, names: &[&str]) -> (PathBuf, PathBuf) {
    let made =
        rcgen::generate_simple_self_signed(names.iter().map(|n| n.to_string()).collect::<Vec<_>>()).unwrap();
    let dir = std::env::temp_dir().join(format!("wirebench-tls-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, made.cert.pem()).unwrap();
    std::fs::write(&key, made.signing_key.serialize_pem()).unwrap();
    (cert, key)
}

/// Per operation: wire = plaintext + one record's overhead each way, one record each way; the
/// wire audited against the kernel; a full handshake per connection.
fn assert_tls_per_op(r: &Report, overhead: f64, plain_tx: f64, plain_rx: f64) {
    assert_clean(r);
    assert!(r.audit_matches(), "{:?}", r.audit);
    let per = |n: u64| n as f64 / r.ops as f64;
    assert_eq!((per(r.tls.plain_tx.op), per(r.tls.plain_rx.op)), (plain_tx, plain_rx), "plaintext per op");
    // In whole bytes (HTTP/2's first request makes the means fractions).
    let records = overhead as u64 * r.ops;
    let wire = (r.tls.plain_tx.op + records, r.tls.plain_rx.op + records);
    assert_eq!((r.tx.op, r.rx.op), wire, "wire per op");
    assert_eq!((per(r.tls.records_tx.op), per(r.tls.records_rx.op)), (1.0, 1.0), "a record per op");
    assert_eq!(r.tls.full.count, r.connects, "a full handshake per connection");
    assert!(r.tls.full.tx > 0 && r.tls.full.rx > r.tls.full.tx, "{:?}", r.tls.full);
    assert!(r.tx.tls >= r.tls.full.tx && r.rx.tls >= r.tls.full.rx);
    assert!(!r.phases.tls.is_empty());
}

#[test]
fn every_tls_scheme_on_every_engine_carries_the_plaintext_runs_bytes_plus_one_record() {
    for server_engine in SERVER_ENGINES {
        let (plain, plain_urls) = {
            let mut handles = Vec::new();
            let mut urls = Vec::new();
            for kind in ["http", "h2", "ws", "nsq", "sio"] {
                let started = serve_started(server_engine, kind, &[]);
                urls.extend(started.urls.concat());
                handles.push(started.handle);
            }
            (handles, urls)
        };
        let mut tls_urls = Vec::new();
        let mut servers = Vec::new();
        for kind in ["http", "h2", "ws", "nsq", "sio"] {
            let (handle, urls, ca) = tls_server(server_engine, kind, &[]);
            tls_urls.extend(urls.into_iter().map(|u| (u, ca.clone())));
            servers.push(handle);
        }
        assert_eq!(plain_urls.len(), tls_urls.len());
        for engine in ENGINES {
            let cpu = client_cpu().to_string();
            for (plain_url, (tls_url, ca)) in plain_urls.iter().zip(&tls_urls) {
                let args = ["-c", "3", "-n", "600", "--cores", &cpu];
                let p = bench_on(engine, &[&[plain_url.as_str()][..], &args].concat());
                assert_clean(&p);
                let r = bench_on(engine, &[&[tls_url.as_str(), "--ca", ca.as_str()][..], &args].concat());
                let what = format!("{tls_url} on {engine} against {server_engine}");
                assert_eq!(r.ops, 600, "{what}");
                assert_tls_per_op(&r, TLS13_RECORD, p.tx_per_op(), p.rx_per_op());
                // The protocol's own set-up is the same inside TLS (NSQ's IDENTIFY then asks
                // for tls_v1, and nsqd's answer says so: those differ).
                if !tls_url.starts_with("nsq://") {
                    assert_eq!(r.tls.plain_tx.handshake, p.tx.handshake, "{what}");
                }
            }
        }
        drop((plain, servers));
    }
}

#[test]
fn tls_1_2_records_cost_29_bytes_and_resumption_is_counted_apart() {
    let (_server, urls, ca) = tls_server("tokio-uring", "http", &[]);
    let cpu = client_cpu().to_string();
    let plain_server = start_builtin_on("tokio-uring", "http");
    let plain =
        bench(&[&format!("http://{}/", plain_server.addr()), "-c", "2", "-n", "400", "--cores", &cpu]);
    let r = bench(&[&urls[0], "--ca", &ca, "--tls-version", "1.2", "-c", "2", "-n", "400", "--cores", &cpu]);
    assert_tls_per_op(&r, TLS12_RECORD, plain.tx_per_op(), plain.rx_per_op());
    // A connection per operation: every one after the first few resumes (a ticket per server
    // name is kept), and a resumed handshake reads far fewer bytes (no certificate).
    let args =
        [&urls[0], "--ca", &ca, "--no-keepalive", "--tls-resume", "-c", "2", "-n", "300", "--cores", &cpu];
    for engine in ENGINES {
        let r = bench_on(engine, &args);
        assert_clean(&r);
        assert!(r.audit_matches());
        assert_eq!(r.tls.full.count + r.tls.resumed.count, r.connects, "{engine}");
        assert!(r.tls.resumed.count >= 290, "{engine}: {:?}", r.tls);
        assert!(r.tls.resumed.rx * r.tls.full.count < r.tls.full.rx * r.tls.resumed.count / 2, "{:?}", r.tls);
    }
    // Without --tls-resume every handshake is a full one.
    let r = bench(&args.iter().copied().filter(|a| *a != "--tls-resume").collect::<Vec<_>>());
    assert_eq!((r.tls.full.count, r.tls.resumed.count), (r.connects, 0));
}

/// `bench ARGS` as `main` runs it: its error line, if it fails.
fn bench_error(args: &[&str]) -> String {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_wirebench")).arg("bench").args(args).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    err
}

#[test]
fn handshake_failures_are_one_clear_line_and_exit_status_2() {
    let (server, urls, ca) = tls_server("tokio-uring", "http", &[]);
    let port = server.addr().port();
    let common = ["-c", "2", "-d", "1s"];
    // No --ca: the self-signed certificate is nobody's.
    let e = bench_error(&[&[urls[0].as_str()][..], &common].concat());
    assert!(e.contains("not signed by a CA we trust") && e.contains("--ca FILE"), "{e}");
    // A certificate for other names.
    let (cert, key) = cert_files("name", &["other.example"]);
    let (other, _, _) = tls_server(
        "tokio-uring",
        "http",
        &["--cert", cert.to_str().unwrap(), "--key", key.to_str().unwrap()],
    );
    let url = format!("https://127.0.0.1:{}/", other.addr().port());
    let e = bench_error(&[&[url.as_str(), "--ca", cert.to_str().unwrap()][..], &common].concat());
    assert!(e.contains("not valid for the URL's host"), "{e}");
    // A version the server will not speak.
    let (old, _, old_ca) = tls_server("tokio-uring", "http", &["--serve-tls-version", "1.2"]);
    let url = format!("https://127.0.0.1:{}/", old.addr().port());
    let e = bench_error(
        &[&[url.as_str(), "--ca", old_ca.as_str(), "--tls-version", "1.3"][..], &common].concat(),
    );
    assert!(e.contains("--tls-version"), "{e}");
    // A plaintext server on a TLS URL: one that answers (an NSQ error frame) and one that waits
    // for the rest of a request head.
    let plain = start_builtin("nsq");
    let url = format!("https://{}/", plain.addr());
    let e = bench_error(&[&[url.as_str(), "--insecure"][..], &common].concat());
    assert!(e.contains("plaintext, not TLS"), "{e}");
    let plain = start_builtin("http");
    let url = format!("https://{}/", plain.addr());
    let e = bench_error(&[&[url.as_str(), "--insecure"][..], &common].concat());
    assert!(e.contains("is this port a TLS one?"), "{e}");
    // --insecure takes any certificate: the run goes.
    let r = bench(&[&urls[0], "--insecure", "-c", "2", "-n", "100"]);
    assert_clean(&r);
    assert_eq!(port, server.addr().port());
    let _ = ca;
}

#[test]
fn nsq_tls_v1_refused_by_a_sink_without_tls_counts_tls_failures_then_exits_2() {
    // The upgrade is asked inside NSQ's handshake: no pre-flight can try it, the run counts it.
    let plain = start_builtin("nsq");
    let url = format!("nsq://{}/test?tls=1", plain.addr());
    let r = bench(&[&url, "--insecure", "-c", "2", "-d", "300ms"]);
    assert_accounted(&r);
    assert_eq!(r.ops, 0);
    assert!(r.conn_errors.get(ErrorClass::Tls) >= 2, "{:?}", r.conn_errors);
    assert!(r.error_samples.iter().any(|s| s.contains("did not agree to tls_v1")), "{:?}", r.error_samples);
    let e = bench_error(&[&url, "--insecure", "-c", "2", "-d", "300ms"]);
    assert!(e.contains("every connection failed its TLS set-up"), "{e}");
}

// ---------------------------------------------------------------------------------------------
// Real peers.

#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_with_ssl_carries_the_same_bytes_as_the_built_in_server_per_record() {
    let (cert, key) = cert_files("nginx", &["localhost", "127.0.0.1"]);
    let server = format!(
        "ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.2 TLSv1.3;",
        cert.display(),
        key.display()
    );
    let (_nginx, addr) = start_nginx_with("ssl", &server);
    let cpu = client_cpu().to_string();
    let ca = cert.to_str().unwrap();
    let url = format!("https://localhost:{}/", addr.port());
    let plain_nginx = {
        let (_n, a) = start_nginx();
        bench(&[&format!("http://{a}/"), "-c", "2", "-n", "500", "--cores", &cpu])
    };
    for engine in ENGINES {
        let r = bench_on(engine, &[&url, "--ca", ca, "-c", "4", "-n", "2000", "--cores", &cpu]);
        assert_tls_per_op(&r, TLS13_RECORD, plain_nginx.tx_per_op(), plain_nginx.rx_per_op());
        let r = bench_on(
            engine,
            &[&url, "--ca", ca, "--tls-version", "1.2", "-c", "2", "-n", "500", "--cores", &cpu],
        );
        assert_tls_per_op(&r, TLS12_RECORD, plain_nginx.tx_per_op(), plain_nginx.rx_per_op());
    }
    // A connection per operation with resumption: nginx resumes through its tickets.
    let r =
        bench(&[&url, "--ca", ca, "--no-keepalive", "--tls-resume", "-c", "2", "-n", "200", "--cores", &cpu]);
    assert_clean(&r);
    assert!(r.audit_matches());
    assert!(r.tls.resumed.count >= 190, "{:?}", r.tls);
}

#[test]
#[ignore = "needs nsqd: run by .ci/run"]
fn a_real_nsqd_upgrades_to_tls_on_identify_and_serves_https() {
    let (cert, key) = cert_files("nsqd", &["localhost", "127.0.0.1"]);
    let (tcp, https) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("wirebench-nsqd-tls-{tcp}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let _nsqd = Peer(
        std::process::Command::new(nsqd_binary())
            .arg(format!("--tcp-address=127.0.0.1:{tcp}"))
            .arg(format!("--http-address=127.0.0.1:{}", free_port()))
            .arg(format!("--https-address=127.0.0.1:{https}"))
            .arg(format!("--tls-cert={}", cert.display()))
            .arg(format!("--tls-key={}", key.display()))
            .arg(format!("--data-path={}", dir.display()))
            .arg("--log-level=warn")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_listening(format!("127.0.0.1:{tcp}").parse().unwrap());
    wait_listening(format!("127.0.0.1:{https}").parse().unwrap());
    let cpu = client_cpu().to_string();
    let ca = cert.to_str().unwrap();
    for engine in ENGINES {
        // TCP PUB inside TLS: 413 bytes out and nsqd's 10-byte OK in, one record each way;
        // /pub on its HTTPS port: nsqd's 200 `OK` answer in.
        let urls =
            [format!("nsq://127.0.0.1:{tcp}/test?tls=1"), format!("nsq+https://127.0.0.1:{https}/test")];
        for (url, plain_rx) in urls.iter().zip([10.0, wire::nsqd_pub_ok()]) {
            let r = bench_on(engine, &[url, "--ca", ca, "-c", "2", "-n", "1000", "--cores", &cpu]);
            let plain_tx =
                if url.starts_with("nsq://") { 413.0 } else { r.tls.plain_tx.op as f64 / r.ops as f64 };
            assert_tls_per_op(&r, TLS13_RECORD, plain_tx, plain_rx);
        }
    }
}

#[test]
#[ignore = "needs Python's websockets: run by .ci/run"]
fn pythons_websockets_over_ssl_echoes_inside_one_record_each_way() {
    use std::io::BufRead;
    let (cert, key) = cert_files("websockets", &["localhost", "127.0.0.1"]);
    let port = free_port();
    let mut child = std::process::Command::new("python3")
        .args([
            format!("{}/tools/ws_echo_server.py", env!("CARGO_MANIFEST_DIR")),
            port.to_string(),
            "60".into(),
            String::new(),
            cert.display().to_string(),
            key.display().to_string(),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let ready = std::io::BufReader::new(child.stdout.take().unwrap()).lines().next();
    let _server = Peer(child);
    assert_eq!(ready.and_then(Result::ok).as_deref(), Some("ready"));
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let url = format!("wss://localhost:{port}/");
        let r = bench_on(
            engine,
            &[
                &url,
                "--ca",
                cert.to_str().unwrap(),
                "-c",
                "4",
                "-n",
                "2000",
                "--size",
                "500",
                "--cores",
                &cpu,
            ],
        );
        assert_tls_per_op(&r, TLS13_RECORD, wire::ws_client_frame(500), wire::ws_server_frame(500));
    }
}

/// `h2://`: HTTP/2 over TLS, agreed by ALPN, against nginx's `ssl http2` on every engine
/// (GETs, and 1 MiB POSTs sent as nginx grants room); and nginx with TLS but without HTTP/2 (it agrees to nothing) is one clear line, exit 2.
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn http2_over_tls_is_agreed_by_alpn_or_refused_in_one_line() {
    let (cert, key) = cert_files("nginx-h2", &["localhost", "127.0.0.1"]);
    // Uploads to /up are proxied to the built-in server: nginx reads each body whole.
    let backend = start_builtin("http");
    let server = format!(
        "ssl_certificate {}; ssl_certificate_key {}; ssl_protocols TLSv1.3; client_max_body_size 2m; \
         location /up {{ proxy_pass http://{}; }}",
        cert.display(),
        key.display(),
        backend.addr()
    );
    let ca = cert.to_str().unwrap();
    let cpu = client_cpu().to_string();
    let (_h2, addr) = start_nginx_with("ssl http2", &server);
    let url = format!("h2://localhost:{}/", addr.port());
    for engine in ENGINES {
        let r =
            bench_on(engine, &[&url, "--ca", ca, "-c", "2", "--depth", "4", "-n", "2000", "--cores", &cpu]);
        assert_clean(&r);
        assert_eq!(r.ops, 2000, "{engine}");
        assert_eq!(r.answers.sorted(), vec![(wirebench::outcome::Answer::status(200), 2000)], "{engine}");
        let post =
            ["-m", "POST", "--size", "1048576", "-c", "2", "--depth", "4", "-n", "32", "--cores", &cpu];
        let up = format!("{url}up");
        let r = bench_on(engine, &[&[up.as_str(), "--ca", ca][..], &post].concat());
        assert_clean(&r);
        assert_eq!(r.answers.sorted(), vec![(wirebench::outcome::Answer::status(200), 32)], "{engine}");
        assert!(r.tx_per_op() > (1_048_576 + 9) as f64, "{engine}: {}", r.tx_per_op());
    }
    let (_h1, addr) = start_nginx_with("ssl", &server);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_wirebench"))
        .args(["bench", &format!("h2://localhost:{}/", addr.port()), "--ca", ca, "-d", "1s"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    // OpenSSL refuses a ClientHello whose ALPN it cannot meet; a server that ignores ALPN is
    // refused by the pre-flight instead ("did not agree to h2 by ALPN").
    assert!(stderr.contains("agreed to none of the protocols offered by ALPN"), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// A CA, and a client certificate it signed (for client authentication), written as PEM files
/// in a fresh directory: (ca.pem, client.pem, client.key).
fn client_pki(tag: &str) -> (String, String, String) {
    use rcgen::{
        BasicConstraints, CertificateParams, ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
    };
    let dir = std::env::temp_dir().join(format!("wirebench-mtls-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params.distinguished_name.push(rcgen::DnType::CommonName, format!("wirebench test CA {tag}"));
    ca_params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::DigitalSignature];
    let ca = rcgen::CertifiedIssuer::self_signed(ca_params, KeyPair::generate().unwrap()).unwrap();
    let mut params = CertificateParams::new(Vec::<String>::new()).unwrap();
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let key = KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &ca).unwrap();
    let at = |f: &str, text: String| {
        let path = dir.join(f);
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    (at("ca.pem", ca.pem()), at("client.pem", cert.pem()), at("client.key", key.serialize_pem()))
}

/// Mutual TLS on every engine: `serve --tls --client-ca` takes a client whose certificate its
/// CA signed (the same bytes per operation as without: the certificate is set-up), and refuses
/// one without a certificate or with another CA's, each in one line before the run.
#[test]
fn client_certificates_are_required_presented_and_refused_in_one_line() {
    let (ca, cert, key) = client_pki("ok");
    let (_, stranger, stranger_key) = client_pki("stranger");
    for engine in ENGINES {
        let (server, urls, server_ca) = tls_server(engine, "http", &["--client-ca", &ca]);
        let url = &urls[0];
        let trust = ["--ca", server_ca.as_str()];
        let r = bench_on(
            engine,
            &[
                &[url.as_str(), "-c", "2", "-n", "200", "--client-cert", &cert, "--client-key", &key][..],
                &trust,
            ]
            .concat(),
        );
        assert_clean(&r);
        assert_eq!(r.ops, 200, "{engine}");
        assert!(
            r.tls.full.tx > 500,
            "{engine}: the client's certificate goes in its handshake: {:?}",
            r.tls.full
        );
        let e = bench_error(&[url.as_str(), "-n", "10", "--ca", &server_ca]);
        assert!(e.contains("requires a client certificate") && e.contains("--client-cert"), "{engine}: {e}");
        let e = bench_error(&[
            url.as_str(),
            "-n",
            "10",
            "--ca",
            &server_ca,
            "--client-cert",
            &stranger,
            "--client-key",
            &stranger_key,
        ]);
        assert!(e.contains("refused our client certificate"), "{engine}: {e}");
        server.stop().unwrap();
    }
    let e = bench_error(&["https://127.0.0.1:1/", "--client-cert", &cert, "--client-key", &cert]);
    assert!(e.contains("--client-key") && e.contains("no PEM private key"), "{e}");
}

/// The same client certificate against nginx with `ssl_verify_client on`: taken with it; without
/// it nginx answers 400 (its way of refusing: the handshake goes on), counted as `status`.
#[test]
#[ignore = "needs nginx: run by .ci/run"]
fn nginx_verifying_clients_takes_our_certificate() {
    let (ca, cert, key) = client_pki("nginx");
    let (server_cert, server_key) = cert_files("nginx-mtls", &["127.0.0.1"]);
    let server = format!(
        "ssl_certificate {}; ssl_certificate_key {}; ssl_client_certificate {ca}; ssl_verify_client on;",
        server_cert.display(),
        server_key.display()
    );
    let (_nginx, addr) = start_nginx_with("ssl", &server);
    let url = format!("https://{addr}/");
    let trust = server_cert.display().to_string();
    let r =
        bench(&[&url, "-c", "2", "-n", "300", "--ca", &trust, "--client-cert", &cert, "--client-key", &key]);
    assert_clean(&r);
    assert_eq!(r.ops, 300);
    let r = bench(&[&url, "-c", "1", "-n", "20", "--ca", &trust]);
    assert_eq!(
        r.failed.get(ErrorClass::Status),
        r.sent,
        "nginx's 400 for a missing certificate: {:?}",
        r.failed
    );
}
