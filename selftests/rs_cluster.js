// SPDX-License-Identifier: GPL-2.0
//
// Node.js's cluster, as a Node server scales over a host's cores: the
// primary accepts each connection and passes it to a worker (SCM_RIGHTS),
// which asks libuv what the descriptor is (fstat) before serving it.
// Run by rdmashare_preload_test under rdmashare-run:
//   node rs_cluster.js IP PORT REQUESTS
// The primary forks two workers, then fetches REQUESTS answers of 64 KiB,
// one connection each, and checks every byte, that both workers served,
// and that each server saw the client's own port.  Exit 0 if all held.
'use strict';
const cluster = require('cluster');
const http = require('http');
const [ip, port, want] = [process.argv[2], +process.argv[3], +process.argv[4]];
const SIZE = 65536;

function fail(why) {
	console.error('rs_cluster: ' + why);
	process.exit(1);
}

if (!cluster.isPrimary) {
	http.createServer((req, res) => {
		const body = Buffer.alloc(SIZE, req.url.length % 251);
		res.setHeader('x-pid', process.pid);
		res.setHeader('x-peer-port', req.socket.remotePort);
		res.end(body);
	}).listen(port, ip);
} else {
	const agent = new http.Agent({ keepAlive: false, maxSockets: 4 });
	const pids = new Set();
	let listening = 0, done = 0;

	cluster.schedulingPolicy = cluster.SCHED_RR;
	setTimeout(() => fail('timed out: ' + done + ' of ' + want), 50000).unref();
	cluster.on('listening', () => {
		if (++listening < 2)
			return;
		for (let i = 0; i < want; i++) {
			const path = '/' + 'x'.repeat(i);
			const req = http.get({ host: ip, port, path, agent }, (res) => {
				const parts = [];
				const mine = req.socket.localPort;

				res.on('data', (d) => parts.push(d));
				res.on('end', () => {
					const b = Buffer.concat(parts);

					if (b.length !== SIZE || b.some((v) => v !== path.length % 251))
						fail('request ' + i + ': ' + b.length + ' bytes, not as sent');
					if (+res.headers['x-peer-port'] !== mine || !mine)
						fail('request ' + i + ': the server saw port ' +
						     res.headers['x-peer-port'] + ', the client has ' + mine);
					pids.add(res.headers['x-pid']);
					if (++done < want)
						return;
					if (pids.size !== 2)
						fail('served by ' + pids.size + ' workers');
					console.log('rs_cluster: ' + done + ' requests, 2 workers');
					for (const w of Object.values(cluster.workers))
						w.kill();
					process.exit(0);
				});
			});
			req.on('error', (e) => fail('request ' + i + ': ' + e.message));
		}
	});
	cluster.fork();
	cluster.fork();
}
