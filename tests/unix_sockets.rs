//! Unix domain sockets (`--unix-socket PATH`, `serve --listen unix:PATH`): every stream
//! protocol on every client engine against the built-in servers listening on a path, each
//! byte the client wrote read by the server and the other way round (the kernel keeps no byte
//! counts for a Unix socket, so the server's own count is the check, and the audit says
//! `unchecked`); TLS over one; nginx on one; and the refusals.

mod common;
use common::*;

/// A path of its own for a test's socket (removed first: a test that failed may have left one).
fn socket_path(tag: &str) -> std::path::PathBuf {
    let path = std::env::temp_dir().join(format!("wb-{tag}-{}.sock", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

/// `serve KIND --listen unix:PATH` in this process on the server CPU (the `uring` engine).
fn serve_unix(kind: &str, path: &std::path::Path, extra: &[&str]) -> wirebench::cmd::serve::Started {
    let listen = format!("unix:{}", path.display());
    let mut argv = vec!["wirebench", "serve", kind, "--listen", &listen, "--engine", "uring"];
    argv.extend_from_slice(extra);
    let cli = <wirebench::cmd::Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
    let wirebench::cmd::Command::Serve(args) = cli.command else { unreachable!() };
    wirebench::cmd::serve::start_args(&args, &[server_cpu()]).expect("built-in server starts")
}

/// A run whose every operation completed, none failed, on Unix sockets alone (the audit
/// unchecked, each socket said to be one).
fn assert_unix_run(r: &wirebench::stats::Report, n: u64, what: &str) {
    assert_eq!(r.errors_total(), 0, "{what}: {:?} {:?}", r.failed, r.error_samples);
    assert_accounted(r);
    assert_eq!(r.ops, n, "{what}");
    assert_eq!(r.audit.sockets, 0, "{what}: no TCP_INFO on a Unix socket");
    let unix = r.audit.inexact.get(&wirebench::stats::Inexact::Unix).copied().unwrap_or(0);
    assert_eq!(unix, r.audit.inexact.values().sum::<u64>(), "{what}: {:?}", r.audit.inexact);
    assert!(unix >= 2, "{what}: every connection's socket counted as a Unix one: {:?}", r.audit);
}

#[test]
fn every_stream_protocol_over_a_unix_socket_on_every_engine() {
    let cpu = client_cpu().to_string();
    let runs: [(&str, &str, &[&str]); 7] = [
        ("http", "http://localhost/", &["-m", "POST", "--size", "300", "--depth", "4"]),
        ("h2", "h2c://localhost/", &["-m", "POST", "--size", "70000"]),
        ("h2", "grpc://localhost/wirebench.Echo/Unary", &["--size", "200"]),
        ("ws", "ws://localhost/", &["--size", "100000"]),
        ("sio", "sio://localhost/", &["--size", "50"]),
        ("tcp", "tcp://localhost/", &["--size", "41", "--response-size", "50"]),
        ("mqtt", "mqtt://localhost/t", &["--size", "64"]),
    ];
    for (kind, url, extra) in runs {
        let path = socket_path(kind);
        let started = serve_unix(kind, &path, &[]);
        let mut written = (0, 0);
        for engine in ENGINES {
            let socket = path.to_str().unwrap();
            let args = [url, "--unix-socket", socket, "-c", "2", "-n", "300", "--cores", &cpu];
            let r = bench_on(engine, &[&args[..], extra].concat());
            assert_unix_run(&r, 300, &format!("{url} on {engine}"));
            written.0 += r.tx.total();
            written.1 += r.rx.total();
        }
        let served = ServerTally::sum(&started.handle.stop().unwrap());
        assert_eq!(served.requests, 3 * 300, "{url}: the server's own count");
        assert_eq!(served.rx, written.0, "{url}: every byte the clients wrote, the server read");
        assert_eq!(served.tx, written.1, "{url}: and the other way");
        assert!(!path.exists(), "{url}: the server's socket file goes with it");
    }
}

#[test]
fn tls_over_a_unix_socket_names_the_urls_host() {
    let path = socket_path("tls");
    let started = serve_unix("http", &path, &["--tls"]);
    let pem = std::env::temp_dir().join(format!("wb-unix-tls-{}.pem", std::process::id()));
    std::fs::write(&pem, &started.tls.as_ref().unwrap().cert_pem).unwrap();
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let args =
            ["https://localhost/", "--unix-socket", path.to_str().unwrap(), "--ca", pem.to_str().unwrap()];
        let r = bench_on(engine, &[&args[..], &["-c", "2", "-n", "200", "--cores", &cpu]].concat());
        assert_unix_run(&r, 200, &format!("https on {engine}"));
        assert_eq!(r.tls.full.count, 2, "{engine}: {:?}", r.tls);
    }
    let served = ServerTally::sum(&started.handle.stop().unwrap());
    assert_eq!(served.requests, 3 * 200);
    let _ = std::fs::remove_file(pem);
}

#[test]
fn refusals_are_one_line() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_wirebench")).args(args).output().unwrap()
    };
    let said = |out: &std::process::Output| String::from_utf8_lossy(&out.stderr).to_string();
    let missing = socket_path("missing");
    let out = run(&["bench", "http://localhost/", "--unix-socket", missing.to_str().unwrap(), "-n", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", said(&out));
    assert!(said(&out).contains("no such file; is the server listening on that path?"), "{}", said(&out));
    for (args, words) in [
        (&["bench", "h3://localhost/", "--unix-socket", "/tmp/x.sock", "-n", "1"][..], "QUIC over UDP"),
        (
            &["bench", "http://localhost/", "--unix-socket", "/tmp/x.sock", "--bind", "127.0.0.1"],
            "--bind names IP",
        ),
        (&["serve", "nsq", "--listen", "unix:/tmp/wb-nsq-refused.sock", "-d", "1s"], "listens on 2 ports"),
        (
            &["serve", "http", "--listen", "unix:/tmp/wb-g.sock", "--engine", "glommio", "-d", "1s"],
            "--engine uring",
        ),
        (&["serve", "h3", "--listen", "unix:/tmp/wb-h3.sock", "-d", "1s"], "QUIC over UDP"),
    ] {
        let out = run(args);
        assert_ne!(out.status.code(), Some(0), "{args:?}");
        assert!(said(&out).contains(words), "{args:?}: {}", said(&out));
        assert_eq!(said(&out).trim().lines().count(), 1, "{args:?}: {}", said(&out));
    }
    // A file that is no socket is never replaced; a socket another server answers on is
    // refused; a socket left by a server that is gone is replaced.
    let plain = socket_path("plain");
    std::fs::write(&plain, "data").unwrap();
    let out = run(&["serve", "http", "--listen", &format!("unix:{}", plain.display()), "-d", "1s"]);
    assert!(said(&out).contains("not a socket"), "{}", said(&out));
    assert_eq!(std::fs::read(&plain).unwrap(), b"data");
    let _ = std::fs::remove_file(&plain);
    let path = socket_path("taken");
    let first = serve_unix("http", &path, &[]);
    let out = run(&["serve", "http", "--listen", &format!("unix:{}", path.display()), "-d", "1s"]);
    assert!(said(&out).contains("another program"), "{}", said(&out));
    drop(std::os::unix::net::UnixListener::bind(socket_path("stale")).unwrap());
    let stale = serve_unix("http", &socket_path("stale"), &[]);
    for handle in [first.handle, stale.handle] {
        handle.stop().unwrap();
    }
}

/// nginx listening on a Unix socket (`listen unix:PATH`), plain and over TLS.
#[test]
#[ignore = "needs nginx (.ci/run installs it)"]
fn nginx_on_a_unix_socket() {
    let plain = socket_path("nginx");
    let tls = socket_path("nginx-tls");
    let (cert, key) = h3_cert_files("nginx-unix");
    let server = format!(
        "listen unix:{}; listen unix:{} ssl; ssl_certificate {}; ssl_certificate_key {};",
        plain.display(),
        tls.display(),
        cert.display(),
        key.display()
    );
    let (_nginx, _addr) = start_nginx_with("", &server);
    let cpu = client_cpu().to_string();
    for engine in ENGINES {
        let r = bench_on(
            engine,
            &[
                "http://localhost/",
                "--unix-socket",
                plain.to_str().unwrap(),
                "-c",
                "2",
                "-n",
                "500",
                "--cores",
                &cpu,
            ],
        );
        assert_unix_run(&r, 500, &format!("nginx on {engine}"));
        // "Hello World" in nginx's answer, whose head is the same size every time.
        assert!(r.rx_per_op() > 11.0, "{engine}: {}", r.rx_per_op());
        let r = bench_on(
            engine,
            &[
                "https://localhost/",
                "--unix-socket",
                tls.to_str().unwrap(),
                "--ca",
                cert.to_str().unwrap(),
                "-c",
                "2",
                "-n",
                "500",
                "--cores",
                &cpu,
            ],
        );
        assert_unix_run(&r, 500, &format!("nginx TLS on {engine}"));
    }
}
