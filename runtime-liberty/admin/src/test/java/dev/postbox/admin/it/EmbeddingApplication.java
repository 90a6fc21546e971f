package dev.postbox.admin.it;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/** The embedding application's own JAX-RS root: the admin jar's resources join it. */
@ApplicationPath("/")
public class EmbeddingApplication extends Application {}
