package dev.postbox.admin;

import jakarta.annotation.Priority;
import jakarta.ws.rs.Priorities;
import jakarta.ws.rs.container.ContainerRequestContext;
import jakarta.ws.rs.container.ContainerRequestFilter;
import jakarta.ws.rs.core.MediaType;
import jakarta.ws.rs.core.Response;
import jakarta.ws.rs.ext.Provider;

/**
 * The role check of the resources marked {@link AdminOnly}, whatever the application's URL
 * patterns: an anonymous caller gets 401, a caller without the role {@code postbox-admin} 403. It
 * fails closed: on a server without application security there is no caller, so every call is 401.
 * The application maps the role to its users or groups (server.xml {@code application-bnd}, or its
 * identity store); this jar's web-fragment.xml also puts {@code /admin/*} and {@code /console/*}
 * behind it, so the server asks for credentials.
 */
@AdminOnly
@Provider
@Priority(Priorities.AUTHORIZATION)
public class AdminGuard implements ContainerRequestFilter {

  /** The role the application maps to its operators. */
  public static final String ROLE = "postbox-admin";

  @Override
  public void filter(ContainerRequestContext request) {
    var security = request.getSecurityContext();
    if (security == null || security.getUserPrincipal() == null) {
      request.abortWith(
          Response.status(Response.Status.UNAUTHORIZED)
              .type(MediaType.APPLICATION_JSON)
              .entity(ApiError.error("sign in as an operator (role " + ROLE + ")"))
              .build());
    } else if (!security.isUserInRole(ROLE)) {
      request.abortWith(
          Response.status(Response.Status.FORBIDDEN)
              .type(MediaType.APPLICATION_JSON)
              .entity(ApiError.error("the role " + ROLE + " is needed"))
              .build());
    }
  }
}
