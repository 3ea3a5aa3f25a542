from django.urls import path

from . import views
from .library import CALLBACK_URL_NAME

# Under /admin/ so that whatever routes the admin (the Ingress, a firewall) routes these too.
urlpatterns = [
    path("sign-in/", views.SignInView.as_view(), name="sso-sign-in"),
    path("callback/", views.CallbackView.as_view(), name=CALLBACK_URL_NAME),
    path("sign-out/", views.SignOutView.as_view(), name="sso-sign-out"),
]
