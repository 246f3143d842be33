//! Helpers shared by the integration tests: built-in servers on ephemeral loopback ports,
//! bench runs parsed from a command line exactly as a user would type it, and real peers.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};
use wirebench::cmd::{Cli, Command as Cmd, ServeKind, bench};
use wirebench::engine::EngineKind;
use wirebench::engine::ServerHandle;
#[allow(unused_imports)]
pub use wirebench::engine::ServerTally;
use wirebench::stats::Report;

/// The CPU the built-in servers run on in tests, and the one the generator uses: different
/// CPUs where the machine has two or more.
pub fn server_cpu() -> usize {
    *wirebench::engine::sys::online_cpus().last().unwrap()
}
pub fn client_cpu() -> usize {
    wirebench::engine::sys::online_cpus()[0]
}

/// Start the built-in server of `kind` on ephemeral loopback ports (all its listeners).
pub fn start_builtin(kind: ServeKind) -> ServerHandle {
    start_builtin_on("glommio", kind)
}

/// The same on the given engine.
pub fn start_builtin_on(engine: &str, kind: ServeKind) -> ServerHandle {
    start_builtin_with(engine, kind, &[])
}

/// The same with more `serve` options (`--head-timeout 1s`, …).
pub fn start_builtin_with(engine: &str, kind: ServeKind, extra: &[&str]) -> ServerHandle {
    let name = match kind {
        ServeKind::Http => "http",
        ServeKind::Nsq => "nsq",
        ServeKind::Ws => "ws",
    };
    let mut argv =
        vec!["wirebench", "serve", name, "--listen", "127.0.0.1:0", "--http-listen", "127.0.0.1:0"];
    argv.extend_from_slice(extra);
    let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
    let Cmd::Serve(args) = cli.command else { unreachable!() };
    let listeners = wirebench::cmd::serve::listeners(kind, &args).expect("listeners");
    let stop = Arc::new(AtomicBool::new(false));
    let engine = <EngineKind as clap::ValueEnum>::from_str(engine, false).expect("an engine");
    let limits = wirebench::cmd::serve::limits(&args).expect("limits");
    wirebench::cmd::serve::start(engine, listeners, &[server_cpu()], limits, stop)
        .expect("built-in server starts")
}

/// Every client engine; the loopback suites run on each.
pub const ENGINES: [&str; 3] = ["glommio", "tokio-uring", "uring"];
/// Engines that also run the built-in servers.
pub const SERVER_ENGINES: [&str; 2] = ["glommio", "tokio-uring"];

/// Run `wirebench bench ARGS…` in-process and return its report.
pub fn bench(args: &[&str]) -> Report {
    bench_on("glommio", args)
}

/// The same on the given engine.
pub fn bench_on(engine: &str, args: &[&str]) -> Report {
    let mut argv = vec!["wirebench", "bench", "--engine", engine];
    argv.extend_from_slice(args);
    let cli = <Cli as clap::Parser>::try_parse_from(argv).expect("arguments parse");
    let Cmd::Bench(args) = cli.command else { unreachable!() };
    let plan = bench::BenchPlan::from_args(&args).expect("plan validates");
    bench::run(&plan).expect("bench runs").1
}

/// Every figure a clean run must show: no error, every operation accounted for, every byte
/// audited on sockets whose counts could all be read.
pub fn assert_clean(r: &Report) {
    assert_eq!(
        r.errors_total(),
        0,
        "failed {:?}, connection errors {:?}: {:?}",
        r.failed,
        r.conn_errors,
        r.error_samples
    );
    assert_accounted(r);
    assert!(r.audit_matches(), "audit: {:?}, app totals tx {} rx {}", r.audit, r.tx.total(), r.rx.total());
    assert_eq!(r.audit.inexact_sockets(), 0, "{:?}", r.audit);
}

/// Every operation sent ended once: completed or failed.
pub fn assert_accounted(r: &Report) {
    assert_eq!(r.sent, r.ops + r.failed.total(), "sent = completed + failed: {:?}", r.failed);
}

/// A process that is killed when dropped, so a failing test leaves nothing running.
pub struct Peer(pub Child);
impl Drop for Peer {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A free loopback port (bound and released; good enough for a test's own peer).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Wait until something accepts connections on `addr`, bounded.
pub fn wait_listening(addr: SocketAddr) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if std::net::TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("nothing listens on {addr} after 10s");
}

/// Start nginx answering `Hello World` on a free port with its own config in a temp dir.
pub fn start_nginx() -> (Peer, SocketAddr) {
    let nginx = which("nginx").expect("nginx is installed (.ci/run installs it)");
    let port = free_port();
    let dir = std::env::temp_dir().join(format!("wirebench-nginx-{port}"));
    std::fs::create_dir_all(&dir).unwrap();
    let conf = format!(
        "worker_processes 1;\ndaemon off;\nuser root;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
         events {{ worker_connections 4096; }}\n\
         http {{\n access_log off;\n keepalive_requests 100000000;\n keepalive_timeout 60s;\n default_type text/plain;\n\
         client_body_temp_path {d}/body; proxy_temp_path {d}/proxy; fastcgi_temp_path {d}/fcgi; uwsgi_temp_path {d}/uwsgi; scgi_temp_path {d}/scgi;\n\
         server {{ listen 127.0.0.1:{port}; location / {{ return 200 \"Hello World\"; }} }}\n}}\n",
        d = dir.display()
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(nginx)
        .arg("-c")
        .arg(&conf_path)
        .arg("-p")
        .arg(&dir)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("nginx starts");
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let peer = Peer(child);
    wait_listening(addr);
    (peer, addr)
}

pub fn which(name: &str) -> Option<std::path::PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/local/sbin".into(), "/usr/local/bin".into()])
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

/// nsqd from `tools/bin` (built by `tools/install-peers.sh`) or the PATH.
pub fn nsqd_binary() -> std::path::PathBuf {
    let local = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/bin/nsqd");
    if local.is_file() {
        return local;
    }
    which("nsqd").expect("nsqd is installed (tools/install-peers.sh builds it into tools/bin)")
}

/// Start a real nsqd on free loopback ports with its own data directory.
/// Returns the process and its TCP and HTTP addresses.
pub fn start_nsqd() -> (Peer, SocketAddr, SocketAddr) {
    let (tcp, http) = (free_port(), free_port());
    let dir = std::env::temp_dir().join(format!("wirebench-nsqd-{tcp}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let child = Command::new(nsqd_binary())
        .arg(format!("--tcp-address=127.0.0.1:{tcp}"))
        .arg(format!("--http-address=127.0.0.1:{http}"))
        .arg(format!("--data-path={}", dir.display()))
        .arg("--log-level=warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("nsqd starts");
    let peer = Peer(child);
    let (tcp, http): (SocketAddr, SocketAddr) =
        (format!("127.0.0.1:{tcp}").parse().unwrap(), format!("127.0.0.1:{http}").parse().unwrap());
    wait_listening(tcp);
    wait_listening(http);
    (peer, tcp, http)
}

/// `GET path` over a plain socket with `Connection: close`; the whole response as text.
pub fn http_get(addr: SocketAddr, path: &str) -> String {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(s, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out
}
