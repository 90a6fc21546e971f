package dev.postbox.broker.sqs.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP forwarder in front of a server, which can take the endpoint away for a while: an outage of
 * the network path, not of the server. While it is down, every open connection is reset and every
 * new one is reset as soon as it is accepted; the server behind it keeps its state. That is what an
 * SQS outage looks like to a client (SQS itself never restarts and never forgets a message).
 *
 * <p>The listening socket stays bound throughout, so the endpoint comes back on its port for sure.
 */
final class EndpointOutage implements AutoCloseable {

  private final int target;
  private final ServerSocket listening;
  private final Set<Socket> open = ConcurrentHashMap.newKeySet();
  private boolean down; // guarded by this

  EndpointOutage(int target) {
    this.target = target;
    try {
      listening = new ServerSocket();
      listening.setReuseAddress(true);
      listening.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    Thread t = new Thread(this::accept, "sqs-endpoint-accept");
    t.setDaemon(true);
    t.start();
  }

  /** The port clients use. */
  int port() {
    return listening.getLocalPort();
  }

  /** Takes the endpoint away: open connections are reset, new ones too, until {@link #up()}. */
  synchronized void down() {
    down = true;
    for (Socket s : open) {
      reset(s); // in-flight requests fail as they would on a dropped network
    }
    open.clear();
  }

  /** Brings the endpoint back. */
  synchronized void up() {
    down = false;
  }

  private void accept() {
    while (!listening.isClosed()) {
      Socket client;
      try {
        client = listening.accept();
      } catch (IOException closed) {
        return; // close()
      }
      Socket upstream = null;
      try {
        synchronized (this) {
          if (down) {
            reset(client);
            continue;
          }
          open.add(client);
        }
        upstream = new Socket(InetAddress.getLoopbackAddress(), target);
        synchronized (this) {
          if (down || !open.contains(client)) { // the endpoint went down while connecting
            reset(client);
            reset(upstream);
            continue;
          }
          open.add(upstream);
        }
        client.setTcpNoDelay(true);
        upstream.setTcpNoDelay(true);
        AtomicInteger directions = new AtomicInteger(2);
        pipe(client, upstream, directions);
        pipe(upstream, client, directions);
      } catch (IOException e) {
        reset(client);
        if (upstream != null) {
          reset(upstream);
        }
      }
    }
  }

  /**
   * Copies one direction. At its end of stream it half-closes the other side, as TCP would pass a
   * FIN on; the pair is closed normally once both directions have ended. A failure resets both.
   */
  private void pipe(Socket from, Socket to, AtomicInteger directions) {
    Thread t =
        new Thread(
            () -> {
              byte[] buffer = new byte[16 * 1024];
              try {
                InputStream in = from.getInputStream();
                OutputStream out = to.getOutputStream();
                int n;
                while ((n = in.read(buffer)) >= 0) {
                  out.write(buffer, 0, n);
                  out.flush();
                }
                to.shutdownOutput();
                if (directions.decrementAndGet() == 0) {
                  closeNormally(from);
                  closeNormally(to);
                }
              } catch (IOException resetOrClosed) {
                reset(from);
                reset(to);
              }
            },
            "sqs-endpoint-pipe");
    t.setDaemon(true);
    t.start();
  }

  private void closeNormally(Socket s) {
    open.remove(s);
    try {
      s.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  /** Closes with RST, not FIN: the peer sees a reset connection. */
  private void reset(Socket s) {
    open.remove(s);
    try {
      if (!s.isClosed()) {
        s.setSoLinger(true, 0);
      }
      s.close();
    } catch (IOException ignored) {
      // already closed
    }
  }

  @Override
  public void close() {
    try {
      listening.close();
    } catch (IOException ignored) {
      // already closed
    }
    down();
  }
}
