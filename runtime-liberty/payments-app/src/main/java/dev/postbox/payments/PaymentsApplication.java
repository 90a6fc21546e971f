package dev.postbox.payments;

import jakarta.ws.rs.ApplicationPath;
import jakarta.ws.rs.core.Application;

/** The payments REST API at the context root: /orders, /ledger, /notifications, /admin. */
@ApplicationPath("/")
public class PaymentsApplication extends Application {}
