import BessBase
import BessSystem
import CLinux
import ControlCore
import Foundation
import Glibc
import Uplink

// The fleet's MQTT driver: many simulated gateways' uplinks on a few threads. Only `bess-hil fleet`
// runs it; bessd drives its one link on the link's own thread (`MQTTUplinkSender.start`).

extension MQTTUplinkSender {
    /// Many senders on a few threads, each thread driving its links from one epoll set (`MQTTGroup.drive`): how
    /// `bess-hil fleet` runs thousands of gateways on one machine with the same uplink code.
    static func startGroup(_ senders: [MQTTUplinkSender], threads: Int) throws(UplinkError) -> MQTTGroup {
        var links: [Link] = []
        for sender in senders {
            links.append(try Link(sender: sender))
            sender.started.withLock { $0 = true }
        }
        let group = MQTTGroup()
        let count = max(1, min(threads, links.count))
        for t in 0..<count {
            let share = stride(from: t, to: links.count, by: count).map { links[$0] }
            let thread = Thread { group.drive(share) }
            thread.name = "fleet-mqtt-\(t)"
            thread.start()
        }
        group.running.withLock { $0 = count }
        return group
    }
}

/// The threads of `MQTTUplinkSender.startGroup`.
final class MQTTGroup: Sendable {
    let stopping = PILock(false)
    let running = PILock(0)
    let done = DispatchSemaphore(value: 0)

    /// Stops every link (offline on status, DISCONNECT) and waits for the threads.
    func stop() {
        stopping.withLock { $0 = true }
        let threads = running.withLock { $0 }
        for _ in 0..<threads { _ = done.wait(timeout: .now() + 30) }
    }

    /// Drives many links on one thread (bess-hil fleet). Work follows events, not the number of
    /// links: an epoll set wakes the thread for the sockets with something to read (or, while
    /// libmosquitto holds bytes it could not write, room to write), and a sweep every 10 ms services
    /// only the links with something new to send whose budget allows a batch, or their once-a-second
    /// keepalive check. (A pass over every link on every wake-up cost O(links) per arriving PUBACK:
    /// at 1,500 links a thread the threads fell seconds behind their own sites.)
    func drive(_ links: [MQTTUplinkSender.Link]) {
        defer { done.signal() }
        let sweep = Duration.milliseconds(10)
        let epoll = bessd_epoll_create()
        guard epoll >= 0 else {
            for link in links {
                link.fail(UplinkError(.mqttEpoll, message: "epoll_create1 failed (errno \(errno))"))
                link.sender.finished.signal()
            }
            return
        }
        defer { close(epoll) }
        // Which link a registered descriptor belongs to: a closed socket leaves the set by itself, and
        // its number may come back as another link's socket.
        var owner: [Int32: Int] = [:]
        var registered = [(socket: Int32, events: UInt32)](repeating: (-1, 0), count: links.count)
        // epoll(7)'s event bits and operations.
        let (pollIn, pollOut, pollErr, pollHup): (UInt32, UInt32, UInt32, UInt32) = (0x001, 0x004, 0x008, 0x010)
        let (add, delete, modify): (Int32, Int32, Int32) = (1, 2, 3)
        let readable = pollIn | pollErr | pollHup
        func track(_ i: Int) {
            let link = links[i]
            let socket = link.open ? link.connection.socket : -1
            let wanted = socket < 0 ? 0 : readable | (link.connection.wantsWrite ? pollOut : 0)
            guard socket != registered[i].socket || wanted != registered[i].events else { return }
            var event = bessd_epoll_event(events: wanted, data: UInt64(i))
            if socket == registered[i].socket {
                _ = bessd_epoll_ctl(epoll, modify, socket, &event)
                registered[i].events = wanted
                return
            }
            let old = registered[i].socket
            if old >= 0, owner[old] == i {
                _ = bessd_epoll_ctl(epoll, delete, old, &event)
                owner[old] = nil
            }
            registered[i] = (-1, 0)
            guard socket >= 0 else { return }
            if bessd_epoll_ctl(epoll, add, socket, &event) != 0 {
                // Not in the set (ENOMEM; ENOSPC: fs.epoll.max_user_watches): left unregistered, read
                // by the sweep and added again there, never taken as watched.
                guard errno == EEXIST, bessd_epoll_ctl(epoll, modify, socket, &event) == 0 else { return }
            }
            if let previous = owner[socket], previous != i { registered[previous] = (-1, 0) }
            owner[socket] = i
            registered[i] = (socket, wanted)
        }
        var events = [bessd_epoll_event](repeating: bessd_epoll_event(), count: 256)
        var nextMisc = [MonotonicInstant](repeating: SystemClock.shared.now(), count: links.count)
        var nextSweep = SystemClock.shared.now()
        var attemptsFrom = 0
        while !stopping.withLock({ $0 }) {
            // Rounded up: rounded down, the last millisecond before a sweep was a busy loop of zero waits.
            let wait = max(0, (min((nextSweep - SystemClock.shared.now()).nanosecondsClamped, sweep.nanosecondsClamped) + 999_999) / 1_000_000)
            let ready = events.withUnsafeMutableBufferPointer { bessd_epoll_wait(epoll, $0.baseAddress, Int32($0.count), Int32(wait)) }
            for k in 0..<max(0, Int(ready)) {
                let i = Int(events[k].data)
                guard i < links.count, links[i].open else { continue }
                links[i].service(readable: events[k].events & readable != 0)
                track(i)
            }
            let now = SystemClock.shared.now()
            guard now >= nextSweep else { continue }
            nextSweep = now + sweep
            // Connection attempts are spread: a few per sweep, so a fleet does not stampede the broker.
            var attempts = 0
            for k in 0..<links.count where attempts < 50 {
                let i = (attemptsFrom + k) % links.count
                if !links[i].open && now >= links[i].nextAttempt {
                    links[i].attempt()
                    track(i)
                    attempts += 1
                }
            }
            attemptsFrom = (attemptsFrom + 50) % max(1, links.count)
            for (i, link) in links.enumerated() where link.open {
                let due = link.connected && link.sender.queue.newest > link.publishedThrough && now >= link.nextPublish
                    && link.inflight.count < link.sender.settings.window
                // A socket epoll refused to watch is read here, every sweep, until it is watched.
                let socket = link.connection.socket
                let unwatched = socket >= 0 && registered[i].socket != socket
                guard due || unwatched || now >= nextMisc[i] else { continue }
                if now >= nextMisc[i] { nextMisc[i] = now + .seconds(1) }
                link.service(readable: unwatched)
                track(i)
            }
        }
        for link in links where link.open && link.connected { link.goOffline() }
        for link in links { link.sender.finished.signal() }
    }
}
