package dev.postbox.payments.reactive;

import jakarta.annotation.Resource;
import jakarta.inject.Inject;
import jakarta.servlet.annotation.WebServlet;
import jakarta.servlet.http.HttpServlet;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import jakarta.transaction.UserTransaction;
import java.io.IOException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Test app code only (the {@code *-reactive-it.jar} that MicroProfileFitIT adds to its copy of the
 * WAR): sends one message on the outgoing channel {@code rm-out} with {@code Emitter}, in a
 * transaction that commits ({@code mode=commit}), one that rolls back ({@code rollback}), or none
 * ({@code none} with a key, {@code bare} a plain payload, answering with how the send ended).
 */
@WebServlet("/reactive-it/send")
public class ReactiveSendServlet extends HttpServlet {

  @Inject ReactiveSender sender;

  @Inject dev.postbox.runtime.api.Outbox outbox;

  @Resource UserTransaction transaction;

  @Override
  protected void doPost(HttpServletRequest req, HttpServletResponse resp) throws IOException {
    String key = req.getParameter("key");
    String payload = req.getParameter("payload");
    String mode = req.getParameter("mode");
    resp.setContentType("text/plain");
    try {
      switch (mode) {
        case "commit" -> {
          transaction.begin();
          sender.sendKeyed(key, payload);
          transaction.commit();
          resp.getWriter().print("committed");
        }
        case "scheduled" -> {
          transaction.begin();
          sender.sendScheduled(key, req.getParameter("id"), payload);
          transaction.commit();
          resp.getWriter().print("committed");
        }
        case "cancel" -> {
          transaction.begin();
          boolean cancelled = outbox.cancel(req.getParameter("id"));
          transaction.commit();
          resp.getWriter().print(cancelled ? "cancelled" : "not scheduled");
        }
        case "rollback" -> {
          transaction.begin();
          sender.sendKeyed(key, payload);
          transaction.rollback();
          resp.getWriter().print("rolled back");
        }
        case "bare" -> {
          try {
            sender.send(payload).toCompletableFuture().get(30, TimeUnit.SECONDS);
            resp.getWriter().print("sent");
          } catch (ExecutionException e) {
            resp.getWriter().print("failed: " + e.getCause().getMessage());
          }
        }
        case "none" -> {
          try {
            sender.sendKeyed(key, payload).toCompletableFuture().get(30, TimeUnit.SECONDS);
            resp.getWriter().print("sent");
          } catch (ExecutionException e) {
            resp.getWriter().print("failed: " + e.getCause().getMessage());
          }
        }
        default -> resp.sendError(400, "mode is commit, rollback or none");
      }
    } catch (Exception e) {
      resp.setStatus(500);
      resp.getWriter().print("error: " + e);
    }
  }
}
