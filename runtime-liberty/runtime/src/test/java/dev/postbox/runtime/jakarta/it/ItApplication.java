package dev.postbox.runtime.jakarta.it;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/** JAX-RS root of the test application. */
@ApplicationPath("/")
public class ItApplication extends Application {}
