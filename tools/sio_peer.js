// A real socket.io server for the peer tests: `node tools/sio_peer.js PORT VERSION PING_MS`.
// VERSION 4 is socket.io 4 (Engine.IO 4), 2 is socket.io 2 (Engine.IO 3). On `/` and `/chat`
// it acknowledges `message` with its arguments and answers `ask` by emitting `answer` with them.
const [port, version, pingMs] = process.argv.slice(2).map(Number);
const options = { pingInterval: pingMs, pingTimeout: pingMs, transports: ["websocket"] };
let io;
if (version === 2) {
  io = require("./sio-peers/node_modules/socket.io-v2")(options);
} else {
  const { Server } = require("./sio-peers/node_modules/socket.io");
  io = new Server(options);
}
for (const nsp of ["/", "/chat"]) {
  io.of(nsp).on("connection", (socket) => {
    socket.on("message", (...args) => {
      const ack = args.pop();
      if (typeof ack === "function") ack(...args);
    });
    socket.on("ask", (...args) => socket.emit("answer", ...args));
  });
}
// socket.io 2 takes its engine options where it listens.
io.listen(port, options);
console.log(`listening on ${port}`);
